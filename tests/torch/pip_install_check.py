"""`pip install` of the fbngrad package gives a working `import fbngrad.torch` (ctest torch_pip_install).

Into a throwaway venv made from the base Python of the interpreter running this script, with
--system-site-packages (so Debian's PyTorch is importable there, as in build/torch-venv):

  1. `cmake --install` of fbngrad's build into a prefix (the library, headers, CMake package);
  2. scikit-build-core and cmake into the venv from a local wheel folder (tools/dev.sh downloads
     them into build/wheels), offline;
  3. `pip install --no-build-isolation --no-index <repository>` with FBNGRAD_PREBUILT=<prefix>:
     pyproject.toml's build through scikit-build-core, the integrations only (no Halide variants
     recompiled: that would take most of an hour on 2 cores), against the venv's torch;
  4. in a fresh process, from another folder and without PYTHONPATH: `import fbngrad.torch` from
     the venv, an nn.BatchNorm2d backward served by fbngrad (its counters) and equal to PyTorch's
     own kernel's within float32 roundoff.

usage: pip_install_check.py --repo DIR --build DIR --cmake CMAKE --wheels DIR --work DIR
"""

import argparse
import os
import shutil
import subprocess
import sys

CHECK = r"""
import os, sys
import torch
import fbngrad, fbngrad.torch as ft
venv = sys.argv[1]
assert os.path.realpath(fbngrad.__file__).startswith(os.path.realpath(venv)), fbngrad.__file__
assert ft.is_enabled()
torch.manual_seed(0)
torch.set_num_threads(2)
for fmt in (torch.contiguous_format, torch.channels_last):
    bn = torch.nn.BatchNorm2d(8)
    x = torch.randn(4, 8, 5, 7).to(memory_format=fmt).requires_grad_()
    g = torch.randn(4, 8, 5, 7).to(memory_format=fmt)
    ft.reset_stats()
    bn(x).backward(g)
    s = ft.stats()
    assert s["fused"] == 1 and s["fallback"] == 0, s
    got = (x.grad.clone(), bn.weight.grad.clone(), bn.bias.grad.clone())
    x.grad = bn.weight.grad = bn.bias.grad = None
    with ft.disabled():
        bn(x).backward(g)
    for a, b in zip(got, (x.grad, bn.weight.grad, bn.bias.grad)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
print("fbngrad", fbngrad.__file__, "torch", torch.__version__, "operators", ft.operators, "ok")
"""


def run(cmd, **kw):
    print("+", " ".join(c if "\n" not in c else "<script>" for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    for name in ("repo", "build", "cmake", "wheels", "work"):
        ap.add_argument("--" + name, required=True)
    a = ap.parse_args()
    if not os.path.isdir(a.wheels):
        sys.exit(f"no wheel folder {a.wheels}: tools/dev.sh build downloads scikit-build-core and cmake there")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    prefix, venv = os.path.join(a.work, "prefix"), os.path.join(a.work, "venv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    run([a.cmake, "--install", a.build, "--prefix", prefix], stdout=subprocess.DEVNULL)
    run([sys._base_executable, "-m", "venv", "--system-site-packages", venv], env=env)
    pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "--disable-pip-version-check"]
    run(pip + ["install", "-q", "--no-index", "--find-links", a.wheels, "scikit-build-core", "cmake"], env=env)
    run(pip + ["install", "-q", "--no-build-isolation", "--no-index",
               "--config-settings=build-dir=" + os.path.join(a.work, "build"),
               "--config-settings=cmake.define.FBNGRAD_PREBUILT=" + prefix, a.repo], env=env)
    run([os.path.join(venv, "bin", "python"), "-c", CHECK, venv], env=env, cwd=a.work)


if __name__ == "__main__":
    main()
