# Cross-compiling fbngrad for 64-bit ARM Linux (AArch64) on an x86-64 Debian
# machine, with Debian's cross toolchain (packages g++-aarch64-linux-gnu and
# gcc-aarch64-linux-gnu, target libraries in /usr/aarch64-linux-gnu) and,
# to run the tests, qemu-user's qemu-aarch64:
#
#   cmake -S . -B build/aarch64 \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake \
#         -DHalide_DIR=<the Halide wheel>/lib64/cmake/Halide \
#         -Dfbngrad-halide_generators_ROOT=<a host (x86-64) build of fbngrad>
#
# The Halide generator cannot run on the target: it comes, already built,
# from the host build (docs/arm.md, "Building").
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)  # cmake/variants.cmake picks the ARM ISAs from this

set(FBNGRAD_AARCH64_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${FBNGRAD_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${FBNGRAD_AARCH64_TRIPLE}-g++)

# Where Debian's cross packages put the target's headers and libraries.
set(FBNGRAD_AARCH64_SYSROOT /usr/${FBNGRAD_AARCH64_TRIPLE})
set(CMAKE_FIND_ROOT_PATH ${FBNGRAD_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # programs (python, qemu) run on the host
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)   # libraries and headers must be the target's
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Packages: the host's Halide (only its CMake helpers, its runtime headers and
# its host tools are used) and the host-built generator are found through
# explicit *_DIR / *_ROOT variables; nothing else may come from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Halide's config looks for HalideHelpers beside itself with HINTS, which the
# root path would move under the sysroot: name it explicitly.
if (DEFINED Halide_DIR AND NOT DEFINED HalideHelpers_DIR)
    cmake_path(GET Halide_DIR PARENT_PATH _fbngrad_halide_cmake_dir)
    set(HalideHelpers_DIR "${_fbngrad_halide_cmake_dir}/HalideHelpers" CACHE PATH "Halide's CMake helpers (host)")
endif ()

# Test programs run under user-mode emulation. -L: the target's dynamic loader
# and libraries. The CPU model comes from the environment (QEMU_CPU=max has
# the ARMv8.2 FP16 extension, QEMU_CPU=cortex-a53 lacks it; qemu's default is max).
find_program(FBNGRAD_QEMU_AARCH64 qemu-aarch64)
if (FBNGRAD_QEMU_AARCH64)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${FBNGRAD_QEMU_AARCH64} -L ${FBNGRAD_AARCH64_SYSROOT})
endif ()
