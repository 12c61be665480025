#!/usr/bin/env bash
# The size table of docs/edge-builds.md: for each configuration and
# architecture, builds libfbngrad.a (the library target only) in
# build/edge/<arch>-<config>, links tools/edge/minimal_app.c (the op) and a
# program that calls fbngrad_version() only against it as an application
# would (-Wl,--gc-sections -s), and prints one Markdown row each:
#
#   tools/edge/sizes.sh [aarch64|x86-64]...      (default: both)
#
# Needs a native build with its generator (tools/dev.sh build: build/cmake),
# the AArch64 cross toolchain, and a few minutes per configuration on 2 cores.
# Reduced configurations leave CUDA out (-DFBNGRAD_ENABLE_CUDA=OFF), as an
# edge build would; "everything" is the default build (CUDA on x86-64), and on
# the native architecture the main build's archive is measured, not rebuilt.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
venv=$root/build/venv
main_build=${FBNGRAD_MAIN_BUILD:-$root/build/cmake}
jobs=${FBNGRAD_JOBS:-2}
archs=("$@")
((${#archs[@]})) || archs=(aarch64 x86-64)
halide_dir=$("$venv/bin/python" -c 'import halide, os; print(os.path.join(os.path.dirname(halide.__file__), "lib64", "cmake", "Halide"))')

# name | what it is | cmake options
configs=(
    "all|everything (the default build)|"
    "f32-nhwc|float32 NHWC, training + inference|-DFBNGRAD_DTYPES=float32 -DFBNGRAD_LAYOUTS=NHWC -DFBNGRAD_ENABLE_CUDA=OFF"
    "f32-f16-nhwc|float32 + float16 NHWC, both modes|-DFBNGRAD_DTYPES=float32;float16 -DFBNGRAD_LAYOUTS=NHWC -DFBNGRAD_ENABLE_CUDA=OFF"
    "f32-both-layouts|float32, NHWC + NCHW, both modes|-DFBNGRAD_DTYPES=float32 -DFBNGRAD_ENABLE_CUDA=OFF"
)

version_app=$(mktemp --suffix=.c)
trap 'rm -f "$version_app"' EXIT
printf '#include <stdio.h>\n#include "fbngrad/fbngrad.h"\nint main(void) { puts(fbngrad_version()); return 0; }\n' >"$version_app"

echo "| arch | configuration | kernels in the archive | libfbngrad.a | the op program | fbngrad_version() only | Halide runtime in the op program |"
echo "|---|---|---:|---:|---:|---:|---:|"
for arch in "${archs[@]}"; do
    case "$arch" in
    aarch64) cc=aarch64-linux-gnu-gcc toolchain=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-aarch64-linux-gnu.cmake") ;;
    x86-64) cc=cc toolchain=() ;;
    *) echo "sizes.sh: unknown architecture $arch (aarch64, x86-64)" >&2; exit 2 ;;
    esac
    for row in "${configs[@]}"; do
        IFS='|' read -r name what options <<<"$row"
        dir=$root/build/edge/$arch-$name
        if [ "$name" = all ] && [ "$arch" = "$(uname -m | tr _ -)" ]; then
            dir=$main_build  # the native default build is this configuration: its archive, not a second build
            [ -e "$dir/src/libfbngrad.a" ] || { echo "sizes.sh: build $dir first (tools/dev.sh build)" >&2; exit 1; }
        else
            # shellcheck disable=SC2086  # the options are words
            "$venv/bin/cmake" -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release "${toolchain[@]}" -DHalide_DIR="$halide_dir" \
                -Dfbngrad-halide_generators_ROOT="$main_build" -DFBNGRAD_BUILD_TESTS=OFF -DFBNGRAD_BUILD_BENCH=OFF \
                -DFBNGRAD_BUILD_CLI=OFF $options >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; exit 1; }
            "$venv/bin/cmake" --build "$dir" -j "$jobs" --target fbngrad >"$dir.build.log" 2>&1 || { tail -40 "$dir.build.log" >&2; exit 1; }
        fi
        lib=$dir/src/libfbngrad.a
        kernels=$(cat "$dir"/src/generated/fbngrad_{variants,reduce_variants,apply_variants}.inc | grep -c '^FBNGRAD_')
        shared=$(cat "$dir"/src/generated/fbngrad_{variants,reduce_variants,apply_variants}.inc | grep -c '^// FBNGRAD_SHARED_CODE' || true)
        op=$("$venv/bin/python" "$root/tools/edge/minimal_app_size.py" --cc "$cc" --lib "$lib" --include "$root/src/include" \
            --out "$dir/minimal_app" --json)
        ver=$("$venv/bin/python" "$root/tools/edge/minimal_app_size.py" --cc "$cc" --lib "$lib" --include "$root/src/include" \
            --app "$version_app" --out "$dir/version_app" --json)
        rt=$("$venv/bin/python" "$root/tools/edge/runtime_share.py" --cc "$cc" --build "$dir" --json)
        "$venv/bin/python" - "$arch" "$what" "$kernels" "$shared" "$(stat -c %s "$lib")" "$op" "$ver" "$rt" <<'EOF'
import json, sys
arch, what, kernels, shared, lib, op, ver, rt = sys.argv[1:]
op, ver, rt = json.loads(op), json.loads(ver), json.loads(rt)
kb = lambda n: f"{n / 1000:,.1f} KB" if n < 1e6 else f"{n / 1e6:,.2f} MB"
k = f"{int(kernels) - int(shared)}" + (f" (+{shared} shared)" if int(shared) else "")
print(f"| {arch} | {what} | {k} | {kb(int(lib))} | {kb(op['file'])} ({kb(op['loaded'])} loaded) "
      f"| {kb(ver['file'])} | {kb(rt.get('halide runtime', 0))} |")
EOF
    done
done
