# THE variant table: the single source of truth for what is built, what the
# dispatcher can pick, what the tests exercise and what the benchmarks time.
# The build expands it into one Halide AOT library per row of the product
# dtype x layout x mode x ISA, and writes fbngrad_variants.inc, an X-macro list
# that src/, tests/ and bench/ include (XNNPACK's manifest pattern). A row may
# also get tuned variants: the winners of the tuner's schedule table for its
# ISA (cmake/tuned_variants.cmake), listed after every hand-scheduled row.

# ISAs per platform, in dispatch priority order (the first the machine supports wins):
#   name | explicit Halide target (never `host`: pitfall P3) | device (C API enum)
# The name is also the dispatcher's fbngrad::Isa enumerator (src/cpu_features.h).
set(FBNGRAD_X86_ISAS
    "avx512|x86-64-linux-avx-avx2-f16c-fma-sse41-avx512-avx512_skylake|FBNGRAD_CPU"
    "avx2|x86-64-linux-avx-avx2-f16c-fma-sse41|FBNGRAD_CPU"
    "sse41|x86-64-linux-sse41|FBNGRAD_CPU")
# AArch64: NEON with the ARMv8.2 half-precision extension (FPHP + ASIMDHP:
# native float16 conversions), then baseline NEON, which every AArch64 CPU has.
set(FBNGRAD_ARM_ISAS
    "arm_fp16|arm-64-linux-arm_fp16|FBNGRAD_CPU"
    "neon|arm-64-linux|FBNGRAD_CPU")
# CUDA (x86-64 Linux hosts; FBNGRAD_ENABLE_CUDA below). Not a CPU ISA: the row
# is "supported" where a CUDA device is usable (runtime/cuda_availability.cpp).
# Halide embeds PTX, which the driver JIT-compiles for the GPU it runs on: PTX
# for compute capability 7.0 (.target sm_70) runs on Volta and everything
# since (Turing, Ampere, Ada, Hopper, Blackwell). The schedule needs nothing
# newer (no bf16 or async-copy instructions: bfloat16 travels as uint16 bits).
set(FBNGRAD_CUDA_ISAS
    "cuda|x86-64-linux-cuda-cuda_capability_70|FBNGRAD_CUDA")

# dtypes: short name | C API enum | Halide type of the tensors
# (bfloat16 travels as uint16 bits; generators/dtype.h converts it.)
set(FBNGRAD_DTYPE_ROWS
    "f32|FBNGRAD_FLOAT32|float32"
    "f16|FBNGRAD_FLOAT16|float16"
    "bf16|FBNGRAD_BFLOAT16|uint16")

# layouts: short name | C API enum
set(FBNGRAD_LAYOUT_ROWS "nhwc|FBNGRAD_NHWC" "nchw|FBNGRAD_NCHW")

# modes: short name | is_training
set(FBNGRAD_MODE_ROWS "train|1" "infer|0")

# Shared code: an ISA whose extension changes the code of some dtypes only.
# Its variants of the other dtypes are, instruction for instruction, those of
# the ISA it extends, so they take that variant's kernel instead of carrying a
# copy (where that ISA is built too): the row, its name and its dispatch stay.
# ARMv8.2 FP16 changes float16's conversions only; a float32 or bfloat16
# arm_fp16 variant is the neon one (tests/check_shared_code.py generates such
# variants for real and compares their code; docs/edge-builds.md).
#   ISA | the ISA whose code it shares | dtypes with code of their own
set(FBNGRAD_SHARED_CODE "arm_fp16|neon|f16")

# Features every variant gets. strict_float: IEEE arithmetic (NaN/Inf
# propagate, no contraction into FMA, no reassociation), as the contract asks.
# user_context: each call passes its own status object to the error handler.
set(FBNGRAD_FEATURES strict_float user_context)

# What this build compiles: the platform's ISA rows, and the one Halide
# runtime every variant shares (the platform's baseline, so that it runs on
# any CPU the dispatcher may meet).
# CMAKE_SYSTEM_PROCESSOR is the build's target: the toolchain file sets it to
# aarch64 in the cross build (cmake/toolchain-aarch64-linux-gnu.cmake).
if (CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    set(FBNGRAD_PLATFORM_ISA_ROWS ${FBNGRAD_ARM_ISAS})
    set(FBNGRAD_RUNTIME_TARGET arm-64-linux)
else ()
    set(FBNGRAD_PLATFORM_ISA_ROWS ${FBNGRAD_X86_ISAS})
    set(FBNGRAD_RUNTIME_TARGET x86-64-linux)
endif ()

# CUDA variants: their code generation needs no GPU and no CUDA toolkit (the
# Halide wheel's LLVM has NVPTX), so they are built wherever the host is
# x86-64 Linux. The shared runtime then holds Halide's CUDA module too
# (add_halide_library USE_RUNTIME adds every variant's target to it).
if (CMAKE_SYSTEM_NAME STREQUAL "Linux" AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(_fbngrad_cuda_default ON)
else ()
    set(_fbngrad_cuda_default OFF)
endif ()
option(FBNGRAD_ENABLE_CUDA "Build the CUDA variants (x86-64 Linux; no GPU needed to build)" ${_fbngrad_cuda_default})

# Selective builds (docs/edge-builds.md): which rows of the table this build
# compiles. Each option is a list; the default is every row, as always. The
# rows keep the table's order (the dispatch priority) whatever the order given.
#   FBNGRAD_DTYPES       float32 float16 bfloat16 (or f32 f16 bf16)
#   FBNGRAD_LAYOUTS      NHWC NCHW (5-D tensors use them with D*H*W merged)
#   FBNGRAD_MODES        training inference (or train infer)
#   FBNGRAD_ISAS         this platform's CPU ISAs (x86-64: avx512 avx2 sse41; AArch64: arm_fp16 neon), or all
#   FBNGRAD_SPLIT_PHASE  the split phase (reduce, apply), ON or OFF
# FBNGRAD_USE_TUNED (tuned_variants.cmake) and FBNGRAD_ENABLE_CUDA (above) are
# the two others. A call for a row left out fails with FBNGRAD_UNIMPLEMENTED
# and names the option that builds it (src/dispatch.cpp).
set(FBNGRAD_DTYPES "float32;float16;bfloat16" CACHE STRING
    "The dtypes to build variants for (float32, float16, bfloat16)")
set(FBNGRAD_LAYOUTS "NHWC;NCHW" CACHE STRING "The layouts to build variants for (NHWC, NCHW)")
set(FBNGRAD_MODES "training;inference" CACHE STRING "The modes to build variants for (training, inference)")
set(FBNGRAD_ISAS "all" CACHE STRING
    "The CPU ISAs to build variants for (x86-64: avx512, avx2, sse41; AArch64: arm_fp16, neon; or all)")
option(FBNGRAD_SPLIT_PHASE "Build the split phase (fbngrad_split_phase_reduce / _apply)" ON)

# fbngrad_select_rows(<option> <rows-var> <aliases>): keeps the rows of
# <rows-var> (the table's "name|..." rows) that the list option <option> names.
# <aliases>: "spelling=name" pairs accepted besides each row's own name
# (case-insensitive). An unknown value, a repeated one or an empty list is a
# configure error that lists what is valid.
function(fbngrad_select_rows option rows_var aliases)
    set(valid "")
    foreach (row IN LISTS ${rows_var})
        string(REPLACE "|" ";" row "${row}")
        list(GET row 0 name)
        list(APPEND valid ${name})
    endforeach ()
    set(wanted "")
    foreach (value IN LISTS ${option})
        string(TOLOWER "${value}" v)
        foreach (alias IN LISTS aliases)
            string(REPLACE "=" ";" alias "${alias}")
            list(GET alias 0 spelling)
            list(GET alias 1 name)
            if (v STREQUAL spelling)
                set(v ${name})
            endif ()
        endforeach ()
        if (NOT v IN_LIST valid)
            string(REPLACE ";" ", " shown "${valid}")
            message(FATAL_ERROR "fbngrad: ${option}=${${option}}: unknown value \"${value}\" (valid here: ${shown})")
        endif ()
        if (v IN_LIST wanted)
            message(FATAL_ERROR "fbngrad: ${option}=${${option}}: \"${value}\" is named twice")
        endif ()
        list(APPEND wanted ${v})
    endforeach ()
    if (NOT wanted)
        message(FATAL_ERROR "fbngrad: ${option} is empty: it must name at least one value")
    endif ()
    set(kept "")
    foreach (row IN LISTS ${rows_var})
        string(REPLACE "|" ";" fields "${row}")
        list(GET fields 0 name)
        if (name IN_LIST wanted)
            list(APPEND kept "${row}")
        endif ()
    endforeach ()
    set(${rows_var} ${kept} PARENT_SCOPE)
endfunction()

fbngrad_select_rows(FBNGRAD_DTYPES FBNGRAD_DTYPE_ROWS "float32=f32;float16=f16;bfloat16=bf16")
fbngrad_select_rows(FBNGRAD_LAYOUTS FBNGRAD_LAYOUT_ROWS "")
fbngrad_select_rows(FBNGRAD_MODES FBNGRAD_MODE_ROWS "training=train;inference=infer")
set(FBNGRAD_ISA_ROWS ${FBNGRAD_PLATFORM_ISA_ROWS})
string(TOLOWER "${FBNGRAD_ISAS}" _fbngrad_isas)
if (NOT _fbngrad_isas STREQUAL "all")
    fbngrad_select_rows(FBNGRAD_ISAS FBNGRAD_ISA_ROWS "")
endif ()
if (FBNGRAD_ENABLE_CUDA)
    list(APPEND FBNGRAD_ISA_ROWS ${FBNGRAD_CUDA_ISAS})
endif ()
# The split-phase variants of each row (reduce and apply; split_phase_variants.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/split_phase_variants.cmake)
# Tuned schedules (the tuner's table, generators/tuned/<isa>.json; tuned_variants.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/tuned_variants.cmake)
message(STATUS "fbngrad: building FBNGRAD_DTYPES=${FBNGRAD_DTYPES} FBNGRAD_LAYOUTS=${FBNGRAD_LAYOUTS} "
               "FBNGRAD_MODES=${FBNGRAD_MODES} FBNGRAD_ISAS=${FBNGRAD_ISAS} FBNGRAD_SPLIT_PHASE=${FBNGRAD_SPLIT_PHASE} "
               "FBNGRAD_USE_TUNED=${FBNGRAD_USE_TUNED} FBNGRAD_ENABLE_CUDA=${FBNGRAD_ENABLE_CUDA}")

# Sets _fbng_shares to the ISA whose code the variant of `isa` and dtype `dt`
# shares (FBNGRAD_SHARED_CODE), or "" (a macro: it reads the caller's loop variables).
macro(fbngrad_shared_isa)
    set(_fbng_shares "")
    foreach (_fbng_row IN LISTS FBNGRAD_SHARED_CODE)
        string(REPLACE "|" ";" _fbng_row "${_fbng_row}")
        list(GET _fbng_row 0 _fbng_isa)
        list(GET _fbng_row 1 _fbng_base)
        list(GET _fbng_row 2 _fbng_own)
        string(REPLACE "," ";" _fbng_own "${_fbng_own}")
        if (_fbng_isa STREQUAL isa AND NOT dt IN_LIST _fbng_own)
            foreach (_fbng_r IN LISTS FBNGRAD_ISA_ROWS)
                if (_fbng_r MATCHES "^${_fbng_base}[|]")
                    set(_fbng_shares ${_fbng_base})
                endif ()
            endforeach ()
        endif ()
    endforeach ()
endmacro()

# One variant's Halide library: the generator run for this row's target with
# the parameters in the list variable `params_var` and the further
# add_halide_library arguments in `extra_var` (DEVICE_CODE ..., AUTOSCHEDULER
# ...), the library added to `libs` and its header included in `hdr_var`.
# Being a macro, it reads fbngrad_add_variants' `generator`, `target` and
# `runtime`, and leaves Halide's ${lib_name}_stmt (and _ptx, _cstmt) there.
macro(fbngrad_add_kernel_library lib_name generator_name params_var extra_var hdr_var)
    add_halide_library(
        ${lib_name} FROM ${generator}
        GENERATOR ${generator_name}
        TARGETS ${target}
        FEATURES ${FBNGRAD_FEATURES}
        USE_RUNTIME ${runtime}
        PARAMS ${${params_var}}
        STMT ${lib_name}_stmt
        ASSEMBLY ${lib_name}_asm
        ${${extra_var}})
    list(APPEND libs ${lib_name})
    string(APPEND ${hdr_var} "#include \"${lib_name}.h\"\n")
endmacro()

# Variant `alias` takes the kernel of `base` (fbngrad_shared_isa): no library
# of its own; the generated header maps its name to base's function, a comment
# line of the X-macro file (`inc_var`) says so for tests/check_vectorized.py,
# and tests/check_shared_code.py gets what it needs to generate it for real.
macro(fbngrad_share_code alias base inc_var hdr_var generator_name params)
    string(APPEND ${hdr_var} "#define ${alias} ${base}  // the same code (FBNGRAD_SHARED_CODE)\n")
    string(APPEND ${inc_var} "// FBNGRAD_SHARED_CODE(${alias}, ${base})\n")
    set_property(GLOBAL APPEND PROPERTY FBNGRAD_SHARED_CODE_CHECKS
                 "${alias}|${base}|${generator_name}|${target}|${params}")
endmacro()

# The CUDA single pass (issue 22): each CUDA NCHW row gets a second library,
# ${name}_plane, the generator with fuse_passes=2 (generators/schedule_cuda.cpp:
# one kernel, one block a channel). It is listed like a tuned row, serving
# the CUDA shape class `plane` (src/shape_class.h: NCHW planes of at most
# kPlaneMaxElements elements a channel); the dispatcher picks it for those
# shapes as it picks a tuned row for its class, the hand-scheduled CUDA row
# (three kernels) for every other shape. A macro, like
# fbngrad_add_tuned_variants: it reads and appends to fbngrad_add_variants'
# variables.
macro(fbngrad_add_cuda_plane_variant)
    if (device STREQUAL "FBNGRAD_CUDA" AND layout STREQUAL "nchw")
        set(_fbng_plane ${name}_plane)
        set(_fbng_plane_params ${params} fuse_passes=2)
        set(_fbng_plane_outputs DEVICE_CODE ${_fbng_plane}_ptx CONCEPTUAL_STMT ${_fbng_plane}_cstmt)
        fbngrad_add_kernel_library(${_fbng_plane} fused_batch_norm_grad _fbng_plane_params _fbng_plane_outputs hdr)
        string(APPEND tuned_inc "FBNGRAD_TUNED_VARIANT(${_fbng_plane}, ${dt_enum}, ${layout_enum}, ${training}, "
                                "${isa}, ${device}, \"plane\")\n")
        set_property(GLOBAL APPEND PROPERTY FBNGRAD_CUDA_VARIANT_FILES
                     "${_fbng_plane}|${${_fbng_plane}_stmt}|${${_fbng_plane}_cstmt}|${${_fbng_plane}_ptx}")
    endif ()
endmacro()

# Expands the table: defines a static library per variant, collects them in
# ${out_libs}, and writes the X-macro file and a header that includes every
# generated header into ${gen_dir}.
function(fbngrad_add_variants generator gen_dir runtime out_libs)
    set(inc "// Generated by cmake/variants.cmake from the variant table. Do not edit.\n")
    string(APPEND inc "// FBNGRAD_VARIANT(name, dtype, layout, is_training, isa, device)\n")
    set(tuned_inc "")
    set(route_inc "")
    set(hdr "// Generated by cmake/variants.cmake. Do not edit.\n#pragma once\n")
    set(libs "")
    foreach (isa_row IN LISTS FBNGRAD_ISA_ROWS)
        string(REPLACE "|" ";" isa_row "${isa_row}")
        list(GET isa_row 0 isa)
        list(GET isa_row 1 target)
        list(GET isa_row 2 device)
        foreach (dtype_row IN LISTS FBNGRAD_DTYPE_ROWS)
            string(REPLACE "|" ";" dtype_row "${dtype_row}")
            list(GET dtype_row 0 dt)
            list(GET dtype_row 1 dt_enum)
            list(GET dtype_row 2 hl_type)
            foreach (layout_row IN LISTS FBNGRAD_LAYOUT_ROWS)
                string(REPLACE "|" ";" layout_row "${layout_row}")
                list(GET layout_row 0 layout)
                list(GET layout_row 1 layout_enum)
                if (FBNGRAD_SPLIT_PHASE)
                    fbngrad_add_split_phase_reduce()
                endif ()
                foreach (mode_row IN LISTS FBNGRAD_MODE_ROWS)
                    string(REPLACE "|" ";" mode_row "${mode_row}")
                    list(GET mode_row 0 mode)
                    list(GET mode_row 1 training)
                    set(name "fbng_${dt}_${layout}_${mode}_${isa}")
                    # CUDA variants also emit their PTX (Halide's device_code
                    # output) and the statement before the GPU loops become
                    # kernels (conceptual_stmt), which tests/cuda/ checks.
                    set(device_outputs "")
                    if (device STREQUAL "FBNGRAD_CUDA")
                        set(device_outputs DEVICE_CODE ${name}_ptx CONCEPTUAL_STMT ${name}_cstmt)
                    endif ()
                    if (training)
                        set(training_param true)
                    else ()
                        set(training_param false)
                    endif ()
                    set(params layout=${layout} training=${training_param}
                               y_backprop.type=${hl_type} x.type=${hl_type} x_backprop.type=${hl_type})
                    fbngrad_shared_isa()
                    if (_fbng_shares)
                        list(JOIN params " " _fbng_params)
                        fbngrad_share_code(${name} fbng_${dt}_${layout}_${mode}_${_fbng_shares} inc hdr
                                           fused_batch_norm_grad "${_fbng_params}")
                    else ()
                        fbngrad_add_kernel_library(${name} fused_batch_norm_grad params device_outputs hdr)
                    endif ()
                    string(APPEND inc "FBNGRAD_VARIANT(${name}, ${dt_enum}, ${layout_enum}, ${training}, ${isa}, ${device})\n")
                    fbngrad_note_two_pass_route(${name} "${params}" "")
                    fbngrad_add_tuned_variants()
                    fbngrad_add_cuda_plane_variant()
                    if (FBNGRAD_SPLIT_PHASE)
                        fbngrad_add_split_phase_apply()
                    endif ()
                    if (NOT device STREQUAL "FBNGRAD_CPU")
                        # name|statement|conceptual statement|PTX, for the codegen checks (tests/cuda/).
                        set_property(GLOBAL APPEND PROPERTY FBNGRAD_CUDA_VARIANT_FILES
                                     "${name}|${${name}_stmt}|${${name}_cstmt}|${${name}_ptx}")
                    endif ()
                endforeach ()
            endforeach ()
        endforeach ()
    endforeach ()
    # Each ISA's Halide target, for the tuner's JIT (bench/tune/).
    set(targets_inc "// Generated by cmake/variants.cmake. FBNGRAD_ISA_TARGET(isa, \"halide target\")\n")
    foreach (isa_row IN LISTS FBNGRAD_ISA_ROWS)
        string(REPLACE "|" ";" isa_row "${isa_row}")
        list(GET isa_row 0 isa)
        list(GET isa_row 1 target)
        string(APPEND targets_inc "FBNGRAD_ISA_TARGET(${isa}, \"${target}\")\n")
    endforeach ()
    file(CONFIGURE OUTPUT "${gen_dir}/fbngrad_isa_targets.inc" CONTENT "${targets_inc}" @ONLY)
    fbngrad_append_tuned_rows(inc)
    file(CONFIGURE OUTPUT "${gen_dir}/fbngrad_variants.inc" CONTENT "${inc}" @ONLY)
    file(CONFIGURE OUTPUT "${gen_dir}/fbngrad_variant_headers.h" CONTENT "${hdr}" @ONLY)
    fbngrad_write_split_phase_manifests()
    set(${out_libs} ${libs} PARENT_SCOPE)
endfunction ()
