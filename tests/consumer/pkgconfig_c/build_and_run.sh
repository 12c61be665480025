#!/usr/bin/env bash
# The ctest consumer_pkgconfig_c: builds main.c against an installed fbngrad
# with nothing but `cc main.c $(pkg-config --cflags --libs fbngrad)`, checks
# that the program needs no Halide or LLVM shared library, and runs it.
# usage: build_and_run.sh <install prefix> <work dir>   (env: CC, PKG_CONFIG)
set -euo pipefail
prefix=$1
work=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cc=${CC:-cc}
pkg_config=${PKG_CONFIG:-pkg-config}
command -v "$pkg_config" >/dev/null || { echo "pkg-config not found (Debian package pkgconf)" >&2; exit 1; }

pc_dir=$(dirname "$(find "$prefix" -name fbngrad.pc -print -quit)")
[ -f "$pc_dir/fbngrad.pc" ] || { echo "no fbngrad.pc under $prefix" >&2; exit 1; }
export PKG_CONFIG_PATH=$pc_dir
# Only the installed tree may be seen, never /usr/lib's or the build tree's.
export PKG_CONFIG_LIBDIR=$pc_dir
version=$("$pkg_config" --modversion fbngrad)
flags=$("$pkg_config" --cflags --libs fbngrad)
echo "pkg-config fbngrad: version $version, flags: $flags"

mkdir -p "$work"
# shellcheck disable=SC2086  # the flags are a word list on purpose
"$cc" -std=c11 -Wall -Wextra -Werror -DEXPECTED_VERSION="\"$version\"" -o "$work/consumer_c" "$here/main.c" $flags

needed=$(readelf -d "$work/consumer_c" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "shared libraries needed: $needed"
for lib in $needed; do
    case "$lib" in
    libc.so.* | libm.so.* | libstdc++.so.* | libgcc_s.so.* | libpthread.so.* | libdl.so.* | ld-linux*) ;;
    *) echo "consumer_c needs $lib; libfbngrad.a must not depend on it (only libc, libm, libstdc++, libgcc_s)" >&2; exit 1 ;;
    esac
done
"$work/consumer_c"
