#!/usr/bin/env bash
# One entry point from a fresh Debian 12 machine to a result:
#   tools/dev.sh demo   install what is missing, build the library and the CLI only, run `fbngrad demo`
#   tools/dev.sh test   install what is missing (TensorFlow too), build everything, run every test
#   tools/dev.sh build  install what is missing, build everything (tests, benchmarks, tuner), run nothing
# Installs Debian packages with apt-get (as root, or through sudo) only when
# some are missing, and Python packages into the project's own virtual
# environment, build/venv. Everything it builds lands under build/.
set -euo pipefail

cmd=${1:-}
case "$cmd" in
demo | test | build) ;;
*)
    echo "usage: tools/dev.sh demo|test|build" >&2
    exit 2
    ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
venv=$build/venv
cmake_dir=$build/cmake
jobs=$(nproc 2>/dev/null || echo 2)
step() { printf '\n== %s\n' "$*"; }

# ---- Debian packages (tools/debian-packages.txt says why each is there) ----
mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$root/tools/debian-packages.txt" | awk '{print $1}')
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    step "installing Debian packages: ${missing[*]}"
    sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
        sudo=sudo
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ---- Python packages, into build/venv ----
requirements=("$root/tools/requirements-build.txt")
[ "$cmd" = test ] && requirements+=("$root/tools/requirements-test.txt")
mkdir -p "$build"
if [ ! -x "$venv/bin/python" ]; then
    step "creating the virtual environment $venv"
    python3 -m venv "$venv"
fi
for req in "${requirements[@]}"; do
    stamp=$venv/.$(basename "$req").$(sha256sum "$req" | cut -c1-16)
    if [ ! -e "$stamp" ]; then
        step "pip install -r $(basename "$req")"
        "$venv/bin/pip" install --disable-pip-version-check -q -r "$req"
        touch "$stamp"
    fi
done

# ---- PyTorch, for the PyTorch integration (integrations/torch, docs/pytorch.md) ----
# Debian's python3-torch (tools/debian-packages.txt) is importable only by /usr/bin/python3 and
# by venvs made from it with --system-site-packages; build/venv's Python (python3 on PATH) may
# be another build that cannot see it. So a second venv, build/torch-venv, over Debian's Python.
torch_venv=$build/torch-venv
if [ ! -x "$torch_venv/bin/python" ] && [ -x /usr/bin/python3 ]; then
    step "creating the virtual environment $torch_venv (/usr/bin/python3, Debian's PyTorch)"
    /usr/bin/python3 -m venv --system-site-packages "$torch_venv"
fi
# The wheels a pip install of the package needs beside the framework, for the offline ctest
# torch_pip_install (tools/requirements-pip-package.txt); for that venv's Python.
wheels=$build/wheels
if [ -x "$torch_venv/bin/python" ] && [ "$cmd" != demo ]; then
    req=$root/tools/requirements-pip-package.txt
    stamp=$wheels/.$(sha256sum "$req" | cut -c1-16)
    if [ ! -e "$stamp" ]; then
        step "pip download -r $(basename "$req") into $wheels"
        "$torch_venv/bin/python" -m pip download --disable-pip-version-check -q -d "$wheels" -r "$req"
        touch "$stamp"
    fi
fi

# ---- Configure and build ----
halide_dir=$("$venv/bin/python" -c 'import halide, os; print(os.path.join(os.path.dirname(halide.__file__), "lib64", "cmake", "Halide"))')
step "configuring ($cmake_dir)"
"$venv/bin/cmake" -S "$root" -B "$cmake_dir" -DCMAKE_BUILD_TYPE=Release -DHalide_DIR="$halide_dir" \
    -DFBNGRAD_PYTHON="$venv/bin/python" -DFBNGRAD_TORCH_PYTHON="$torch_venv/bin/python" \
    -DFBNGRAD_PIP_WHEELS="$([ -d "$wheels" ] && echo "$wheels")" >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
if [ "$cmd" = demo ]; then
    # The demo needs the CLI and what it links (the library: every variant of the table), not the
    # tests, benchmarks or tuner: those are built by `test` and `build`.
    step "building the library and the CLI with $jobs jobs (the Halide variants of the table, libfbngrad.a, fbngrad)"
    "$venv/bin/cmake" --build "$cmake_dir" -j "$jobs" --target fbngrad_cli
else
    step "building with $jobs jobs (the Halide variants of the table, then the library, CLI, tests and bench)"
    "$venv/bin/cmake" --build "$cmake_dir" -j "$jobs"
fi

# ---- Run ----
case "$cmd" in
demo)
    step "fbngrad demo"
    "$cmake_dir/bin/fbngrad" demo
    ;;
test)
    step "ctest (x86-64, this machine)"
    (cd "$cmake_dir" && "$venv/bin/ctest" --output-on-failure -j "$jobs" --timeout 900)
    # Further CI stages (cross builds, sanitizers, packaging, MPI, ...): one
    # script each in tools/ci/, run in name order, each with its own build
    # directory under build/. Each ends with its own ctest summary.
    export FBNGRAD_ROOT=$root FBNGRAD_VENV=$venv FBNGRAD_BUILD=$build FBNGRAD_MAIN_BUILD=$cmake_dir FBNGRAD_JOBS=$jobs
    for stage in "$root"/tools/ci/*.sh; do
        [ -e "$stage" ] || continue
        step "CI stage $(basename "$stage")"
        bash "$stage"
    done
    step "all test stages passed"
    ;;
esac
