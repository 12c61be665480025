# Tuned variants: the winners the tuner (bench/tune/, fbngrad_tune) wrote to
# the schedule table of an ISA, ${FBNGRAD_TUNING_DIR}/<isa>.json. For each
# fused row (dtype x layout x mode x ISA), every distinct winning schedule
# becomes one more library, named after the shape classes it serves:
#   fbng_<dtype>_<layout>_<mode>_<isa>_<class>[_<class>...]
# and a row of its own at the end of fbngrad_variants.inc:
#   FBNGRAD_TUNED_VARIANT(name, dtype, layout, is_training, isa, device, "class,class")
# The hand-scheduled row stays, and serves every class no tuned row claims
# (src/dispatch.cpp). A file that includes fbngrad_variants.inc without
# defining FBNGRAD_TUNED_VARIANT sees the hand-scheduled rows only.
option(FBNGRAD_USE_TUNED "Build the tuned schedules of the schedule tables (generators/tuned/)" ON)
set(FBNGRAD_TUNING_DIR "${PROJECT_SOURCE_DIR}/generators/tuned" CACHE PATH
    "Where the schedule tables (<isa>.json, written by fbngrad_tune) are read from")

# Reads ${FBNGRAD_TUNING_DIR}/${isa}.json once per configure; "" when absent.
function(_fbngrad_tuning_table isa out)
    set(file "${FBNGRAD_TUNING_DIR}/${isa}.json")
    if (NOT FBNGRAD_USE_TUNED OR NOT EXISTS "${file}")
        set(${out} "" PARENT_SCOPE)
        return()
    endif ()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
    file(READ "${file}" json)
    string(JSON format ERROR_VARIABLE err GET "${json}" format)
    if (err OR NOT format STREQUAL "fbngrad-schedule-table-1")
        message(FATAL_ERROR "fbngrad: ${file} is not a schedule table written by fbngrad_tune (${err})")
    endif ()
    set(${out} "${json}" PARENT_SCOPE)
endfunction()

# Inside fbngrad_add_variants' loops (a macro: it reads the loop's variables
# and appends to its `libs`, `hdr` and `tuned_inc`).
macro(fbngrad_add_tuned_variants)
    _fbngrad_tuning_table(${isa} _fbng_table)
    set(_fbng_scheds "")  # distinct winning schedules of this row, as JSON text
    if (_fbng_table)
        string(JSON _fbng_n LENGTH "${_fbng_table}" entries)
        if (_fbng_n GREATER 0)
            math(EXPR _fbng_last "${_fbng_n} - 1")
            foreach (_fbng_i RANGE ${_fbng_last})
                string(JSON _fbng_cell GET "${_fbng_table}" entries ${_fbng_i} cell)
                string(JSON _fbng_winner GET "${_fbng_table}" entries ${_fbng_i} winner)
                if (NOT _fbng_cell STREQUAL "${dt}/${layout}/${mode}" OR _fbng_winner STREQUAL "hand")
                    continue()
                endif ()
                string(JSON _fbng_class GET "${_fbng_table}" entries ${_fbng_i} class)
                string(JSON _fbng_sched GET "${_fbng_table}" entries ${_fbng_i} schedule)
                string(MD5 _fbng_key "${_fbng_sched}")
                if (NOT _fbng_key IN_LIST _fbng_scheds)
                    list(APPEND _fbng_scheds ${_fbng_key})
                    set(_fbng_sched_${_fbng_key} "${_fbng_sched}")
                    set(_fbng_classes_${_fbng_key} "")
                endif ()
                list(APPEND _fbng_classes_${_fbng_key} ${_fbng_class})
            endforeach ()
        endif ()
    endif ()
    foreach (_fbng_key IN LISTS _fbng_scheds)
        set(_fbng_sched "${_fbng_sched_${_fbng_key}}")
        list(JOIN _fbng_classes_${_fbng_key} "_" _fbng_suffix)
        list(JOIN _fbng_classes_${_fbng_key} "," _fbng_classlist)
        set(_fbng_tname "${name}_${_fbng_suffix}")
        # The schedule: generator knobs, or one of Halide's autoschedulers.
        set(_fbng_params "")
        set(_fbng_auto "")
        string(JSON _fbng_knobs ERROR_VARIABLE _fbng_err GET "${_fbng_sched}" knobs)
        if (NOT _fbng_err)
            string(JSON _fbng_nk LENGTH "${_fbng_knobs}")
            math(EXPR _fbng_nk "${_fbng_nk} - 1")
            foreach (_fbng_j RANGE ${_fbng_nk})
                string(JSON _fbng_k MEMBER "${_fbng_knobs}" ${_fbng_j})
                string(JSON _fbng_v GET "${_fbng_knobs}" ${_fbng_k})
                list(APPEND _fbng_params "${_fbng_k}=${_fbng_v}")
            endforeach ()
        endif ()
        string(JSON _fbng_as ERROR_VARIABLE _fbng_err GET "${_fbng_sched}" autoscheduler)
        if (NOT _fbng_err)
            set(_fbng_auto AUTOSCHEDULER Halide::${_fbng_as})
            list(APPEND _fbng_params autoscheduler.parallelism=2)
        endif ()
        set(_fbng_all_params layout=${layout} training=${training_param}
                             y_backprop.type=${hl_type} x.type=${hl_type} x_backprop.type=${hl_type} ${_fbng_params})
        fbngrad_add_kernel_library(${_fbng_tname} fused_batch_norm_grad _fbng_all_params _fbng_auto hdr)
        fbngrad_note_two_pass_route(${_fbng_tname} "${_fbng_all_params}" "${_fbng_auto}")
        string(APPEND tuned_inc "FBNGRAD_TUNED_VARIANT(${_fbng_tname}, ${dt_enum}, ${layout_enum}, ${training}, "
                                "${isa}, ${device}, \"${_fbng_classlist}\")\n")
        message(STATUS "fbngrad: tuned variant ${_fbng_tname}: ${_fbng_params}")
    endforeach ()
endmacro()

# Appends the tuned rows to the X-macro text `inc_var`, with a do-nothing
# default for files that list the hand-scheduled rows only.
macro(fbngrad_append_tuned_rows inc_var)
    string(APPEND ${inc_var} "// FBNGRAD_TUNED_VARIANT(name, dtype, layout, is_training, isa, device, classes):\n"
                             "// the tuned schedules (cmake/tuned_variants.cmake), after every hand-scheduled row.\n"
                             "#ifndef FBNGRAD_TUNED_VARIANT\n#define FBNGRAD_TUNED_VARIANT(...)\n"
                             "#define FBNGRAD_TUNED_VARIANT_DEFAULTED\n#endif\n${tuned_inc}"
                             "#ifdef FBNGRAD_TUNED_VARIANT_DEFAULTED\n#undef FBNGRAD_TUNED_VARIANT\n"
                             "#undef FBNGRAD_TUNED_VARIANT_DEFAULTED\n#endif\n")
endmacro()
