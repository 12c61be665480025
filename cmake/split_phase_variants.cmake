# The split-phase variants (generators/split_phase_generator.cpp: batch norm
# synchronized across workers) come from the same variant table as the fused
# ones, so they exist for every ISA row, dtype and layout the fused ones do,
# the CUDA row included (schedule_cuda.cpp schedules each phase; the API runs
# them on the caller's device memory, src/split_phase_api.cpp):
#   fbng_reduce_<dtype>_<layout>_<isa>         the sums do not depend on the mode
#   fbng_apply_<dtype>_<layout>_<mode>_<isa>
# fbngrad_add_variants (variants.cmake) calls these macros inside its loops;
# being macros, they read that function's loop variables and append to its
# `libs` (so that the libraries are linked with the fused ones), and to
# `reduce_inc`, `apply_inc` and `split_hdr`, which
# fbngrad_write_split_phase_manifests writes out as
#   fbngrad_reduce_variants.inc  FBNGRAD_REDUCE_VARIANT(name, dtype, layout, isa, device)
#   fbngrad_apply_variants.inc   FBNGRAD_APPLY_VARIANT(name, dtype, layout, is_training, isa, device)
# and fbngrad_split_phase_headers.h (every generated header), for src/split_phase_dispatch.cpp.
# CUDA variants also emit their PTX and conceptual statement, as the fused
# ones do, and join the FBNGRAD_CUDA_VARIANT_FILES list that tests/cuda/
# checks (its schedule check knows a reduce or apply variant by its name).

# DEVICE_CODE / CONCEPTUAL_STMT outputs of a CUDA row's variant (none for the CPU's).
macro(fbngrad_split_phase_device_outputs)
    set(_fbng_device_outputs "")
    if (device STREQUAL "FBNGRAD_CUDA")
        set(_fbng_device_outputs DEVICE_CODE ${_fbng_name}_ptx CONCEPTUAL_STMT ${_fbng_name}_cstmt)
    endif ()
endmacro()

macro(fbngrad_split_phase_record_cuda)
    if (device STREQUAL "FBNGRAD_CUDA")
        set_property(GLOBAL APPEND PROPERTY FBNGRAD_CUDA_VARIANT_FILES
                     "${_fbng_name}|${${_fbng_name}_stmt}|${${_fbng_name}_cstmt}|${${_fbng_name}_ptx}")
    endif ()
endmacro()

# One split-phase variant `_fbng_name` (set by the caller) of generator
# `generator_name`, with the parameters in the list `_fbng_params`: a library of
# its own, or the code of the ISA it shares (fbngrad_shared_isa); `inc_line` goes
# to the X-macro file `inc_var`.
macro(fbngrad_add_split_phase_variant base_name generator_name inc_var inc_line)
    fbngrad_split_phase_device_outputs()
    fbngrad_shared_isa()  # variants.cmake: FBNGRAD_SHARED_CODE
    if (_fbng_shares)
        list(JOIN _fbng_params " " _fbng_params_text)
        fbngrad_share_code(${_fbng_name} ${base_name}_${_fbng_shares} ${inc_var} split_hdr ${generator_name}
                           "${_fbng_params_text}")
    else ()
        fbngrad_add_kernel_library(${_fbng_name} ${generator_name} _fbng_params _fbng_device_outputs split_hdr)
        fbngrad_split_phase_record_cuda()
    endif ()
    string(APPEND ${inc_var} "${inc_line}\n")
endmacro()

macro(fbngrad_add_split_phase_reduce)
    set(_fbng_name "fbng_reduce_${dt}_${layout}_${isa}")
    set(_fbng_params layout=${layout} y_backprop.type=${hl_type} x.type=${hl_type})
    fbngrad_add_split_phase_variant(fbng_reduce_${dt}_${layout} batch_norm_grad_reduce reduce_inc
        "FBNGRAD_REDUCE_VARIANT(${_fbng_name}, ${dt_enum}, ${layout_enum}, ${isa}, ${device})")
endmacro()

macro(fbngrad_add_split_phase_apply)
    set(_fbng_name "fbng_apply_${dt}_${layout}_${mode}_${isa}")
    set(_fbng_params layout=${layout} training=${training_param}
                     y_backprop.type=${hl_type} x.type=${hl_type} x_backprop.type=${hl_type})
    fbngrad_add_split_phase_variant(fbng_apply_${dt}_${layout}_${mode} batch_norm_grad_apply apply_inc
        "FBNGRAD_APPLY_VARIANT(${_fbng_name}, ${dt_enum}, ${layout_enum}, ${training}, ${isa}, ${device})")
endmacro()

# The x86 NCHW one pass's second route (src/two_pass_route.h): its tasks hold
# every sample of a channel, so where one channel's planes exceed a task of
# the call's size, the call runs as this row's split phase on one worker
# instead (reduce, then apply: the rule's tasks, and the one pass's bits,
# which need the split phase's vector width). For the fused row
# `fused_name` built with the parameters `fused_params` (a list) and
# autoscheduler `auto` (""), appends
#   FBNGRAD_TWO_PASS_ROUTE(fused, reduce, apply)
# to `route_inc` where the row is an x86 NCHW one pass (the generator's
# default for it, generators/schedule.cpp fuses_passes, unless fuse_passes=1)
# of vector_multiple 1. A tuned one pass of another width keeps its C tasks,
# and the configure says so.
macro(fbngrad_note_two_pass_route fused_name fused_params auto)
    set(_fbng_route_params ${fused_params})
    if (FBNGRAD_SPLIT_PHASE AND device STREQUAL "FBNGRAD_CPU" AND layout STREQUAL "nchw" AND target MATCHES "^x86-64-"
        AND "${auto}" STREQUAL "" AND NOT "fuse_passes=1" IN_LIST _fbng_route_params)
        set(_fbng_route_width 1)
        foreach (_fbng_p IN LISTS _fbng_route_params)
            if (_fbng_p MATCHES "^vector_multiple=([0-9]+)$" AND NOT CMAKE_MATCH_1 EQUAL 0)
                set(_fbng_route_width ${CMAKE_MATCH_1})
            endif ()
        endforeach ()
        if (_fbng_route_width EQUAL 1)
            string(APPEND route_inc "FBNGRAD_TWO_PASS_ROUTE(${fused_name}, fbng_reduce_${dt}_${layout}_${isa}, "
                                    "fbng_apply_${dt}_${layout}_${mode}_${isa})\n")
        else ()
            message(WARNING "fbngrad: ${fused_name} is an NCHW one pass of vector_multiple ${_fbng_route_width}: "
                            "its calls offer at most C tasks (the split phase, its two-pass route, sums with "
                            "vector_multiple 1, so other bits; src/two_pass_route.h)")
        endif ()
    endif ()
endmacro()

macro(fbngrad_write_split_phase_manifests)
    set(_fbng_head "// Generated by cmake/split_phase_variants.cmake from the variant table. Do not edit.\n")
    file(CONFIGURE OUTPUT "${gen_dir}/fbngrad_reduce_variants.inc"
         CONTENT "${_fbng_head}// FBNGRAD_REDUCE_VARIANT(name, dtype, layout, isa, device)\n${reduce_inc}" @ONLY)
    file(CONFIGURE OUTPUT "${gen_dir}/fbngrad_apply_variants.inc"
         CONTENT "${_fbng_head}// FBNGRAD_APPLY_VARIANT(name, dtype, layout, is_training, isa, device)\n${apply_inc}" @ONLY)
    file(CONFIGURE OUTPUT "${gen_dir}/fbngrad_two_pass_routes.inc"
         CONTENT "${_fbng_head}// FBNGRAD_TWO_PASS_ROUTE(fused, reduce, apply): src/two_pass_route.h\n${route_inc}" @ONLY)
    file(CONFIGURE OUTPUT "${gen_dir}/fbngrad_split_phase_headers.h"
         CONTENT "${_fbng_head}#pragma once\n${split_hdr}" @ONLY)
endmacro()
