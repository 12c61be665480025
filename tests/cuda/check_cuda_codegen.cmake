# Build-time checks of one CUDA variant, run by ctest without a GPU:
#   cmake -DCHECK=schedule -DNAME=<variant> -DSTMT=<.stmt> -DCONCEPTUAL=<.conceptual.stmt> -P check_cuda_codegen.cmake
#     the schedule put the work on the GPU: gpu_block and gpu_thread loops
#     (both thread dimensions: 2-D tiles), the main passes (the plane sums and
#     x_backprop, where there is one) inside gpu_block loops, kernels launched,
#     and nothing copied to the host (every Func runs on the device: a Func left
#     on the CPU would need its inputs copied back).
#     The NCHW single pass (<variant>_plane): one gpu_block loop, x_backprop's,
#     with the chunk sums inside.
#     Split-phase variants, known by their names: fbng_reduce_* has the chunk
#     sums and no x_backprop (its 2-D thread blocks are NHWC's; NCHW's sums
#     use 1-D ones), fbng_apply_* has x_backprop and no chunk sums (it takes
#     the sums as inputs).
#   cmake -DCHECK=ptxas -DNAME=<variant> -DPTX=<.device_code> -DPTXAS=<ptxas or empty> -DARCH=sm_90 -DOUT=<dir> -P ...
#     the embedded PTX assembles for ARCH; without ptxas it says "ptxas not found"
#     and passes, which ctest turns into "skipped" (SKIP_REGULAR_EXPRESSION).
cmake_minimum_required(VERSION 3.20)

function(fail msg)
    message(FATAL_ERROR "${NAME}: ${msg}")
endfunction()

# Counts the lines of FILE matching REGEX (file(STRINGS) skips the embedded binary data).
function(count_lines out file regex)
    file(STRINGS "${file}" lines REGEX "${regex}")
    list(LENGTH lines n)
    set(${out} ${n} PARENT_SCOPE)
endfunction()

if (CHECK STREQUAL "schedule")
    foreach (f STMT CONCEPTUAL)
        if (NOT EXISTS "${${f}}")
            fail("missing ${${f}} (build the variant first)")
        endif ()
    endforeach ()
    count_lines(blocks "${CONCEPTUAL}" "gpu_block<CUDA>")
    count_lines(threads_x "${CONCEPTUAL}" "gpu_thread<CUDA> \\(\\.thread_id_x")
    count_lines(threads_y "${CONCEPTUAL}" "gpu_thread<CUDA> \\(\\.thread_id_y")
    # The plane sums: a kernel of their own, the wrapper of the chunk sums
    # (NHWC, partial_intm) or of the plane sums (NCHW, partial), whose blocks
    # sum inside (schedule_cuda.cpp).
    count_lines(chunk "${CONCEPTUAL}" "gpu_block<CUDA> \\((partial_intm|partial)_global_wrapper")
    if (NAME MATCHES "_plane$")
        # The single pass: one grid, x_backprop's, whose blocks sum their channel first.
        count_lines(chunk "${CONCEPTUAL}" "produce partial_intm_intm")
        if (NOT blocks EQUAL 1)
            fail("the single pass should be one gpu_block loop (x_backprop's), not ${blocks}")
        endif ()
    endif ()
    count_lines(xb "${CONCEPTUAL}" "gpu_block<CUDA> \\(x_backprop\\.s0\\.")
    count_lines(launches "${STMT}" "halide_cuda_run\\(")
    count_lines(to_host "${STMT}" "halide_copy_to_host")
    message(STATUS "${NAME}: ${blocks} gpu_block loops, gpu_thread x/y ${threads_x}/${threads_y}, "
                   "${launches} kernel launches, ${to_host} copies to the host")
    set(sums_phase ON)
    set(outputs_phase ON)
    set(two_d ON)
    if (NAME MATCHES "^fbng_reduce_")
        set(outputs_phase OFF)
        if (NAME MATCHES "_nchw_")
            set(two_d OFF)
        endif ()
    elseif (NAME MATCHES "^fbng_apply_")
        set(sums_phase OFF)
    endif ()
    if (blocks LESS 1 OR threads_x LESS 1 OR (two_d AND threads_y LESS 1))
        fail("expected gpu_block loops and 2-D gpu_thread loops in ${CONCEPTUAL}")
    endif ()
    if (sums_phase AND chunk LESS 1)
        fail("the plane sums (partial or partial_intm update) are not a gpu_block loop")
    elseif (NOT sums_phase AND chunk GREATER 0)
        fail("the apply phase computes chunk sums (it should take the sums as inputs)")
    endif ()
    if (outputs_phase AND xb LESS 1)
        fail("x_backprop is not a gpu_block loop")
    elseif (NOT outputs_phase AND xb GREATER 0)
        fail("the reduce phase has an x_backprop loop")
    endif ()
    if (launches LESS 1)
        fail("no halide_cuda_run in ${STMT}")
    endif ()
    if (to_host GREATER 0)
        fail("${to_host} halide_copy_to_host calls in ${STMT}: part of the pipeline runs on the CPU")
    endif ()
elseif (CHECK STREQUAL "ptxas")
    if (NOT PTXAS)
        message("ptxas not found (no CUDA toolkit here): the PTX of ${NAME} was not assembled")
        return()
    endif ()
    if (NOT EXISTS "${PTX}")
        fail("missing ${PTX} (build the variant first)")
    endif ()
    file(STRINGS "${PTX}" target REGEX "^\\.target ")
    file(MAKE_DIRECTORY "${OUT}")
    execute_process(COMMAND "${PTXAS}" "-arch=${ARCH}" "${PTX}" -o "${OUT}/${NAME}.${ARCH}.cubin"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if (NOT rc EQUAL 0)
        fail("ptxas -arch=${ARCH} failed (${rc}):\n${out}${err}")
    endif ()
    file(SIZE "${OUT}/${NAME}.${ARCH}.cubin" size)
    message(STATUS "${NAME}: PTX (${target}) assembled for ${ARCH}: ${size} bytes of SASS")
else ()
    fail("CHECK must be schedule or ptxas, not '${CHECK}'")
endif ()
