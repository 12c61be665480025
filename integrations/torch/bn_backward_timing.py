#!/usr/bin/env python3
"""One nn.BatchNorm2d backward, PyTorch's kernel against fbngrad's, on a few shapes.

torch.autograd.grad of a BatchNorm2d output, 50 calls after 3 warm-ups, per shape and memory
format, with fbngrad.torch disabled and enabled; prints milliseconds a call and fbngrad's counters.

    build/torch-venv/bin/python integrations/torch/bn_backward_timing.py [--threads 2]
(run from the repository root after tools/dev.sh build; it imports the installed package, else the
build tree's copy, build/cmake/python)
"""

import argparse
import importlib.util
import os
import sys
import time

import torch

if importlib.util.find_spec("fbngrad") is None:  # not installed (pip): the build tree's copy
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "cmake", "python"))
import fbngrad.torch as ft  # noqa: E402

SHAPES = [(32, 16, 16, 16), (32, 64, 8, 8), (32, 64, 56, 56)]


def time_backward(shape, channels_last, use_fbngrad, calls=50):
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(shape[1])
    x = torch.randn(*shape)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    x.requires_grad_()
    y = bn(x)
    g = torch.randn_like(y)
    with (ft.enabled() if use_fbngrad else ft.disabled()):
        for _ in range(3):
            torch.autograd.grad(y, x, g, retain_graph=True)
        t0 = time.perf_counter()
        for _ in range(calls):
            torch.autograd.grad(y, x, g, retain_graph=True)
        return (time.perf_counter() - t0) / calls * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print("| shape (N, C, H, W) | memory format | ATen ms | fbngrad ms |")
    print("|---|---|---:|---:|")
    for shape in SHAPES:
        for cl in (False, True):
            aten = time_backward(shape, cl, False)
            fb = time_backward(shape, cl, True)
            print(f"| {', '.join(map(str, shape))} | {'channels_last' if cl else 'contiguous'} | {aten:.3g} | {fb:.3g} |")
    print(ft.stats())


if __name__ == "__main__":
    main()
