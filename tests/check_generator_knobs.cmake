# The generator refuses schedule knobs it cannot honour, with a message, rather
# than building something else (generators/schedule.cpp). Also checks that the
# knob values the tuner uses do build, so the refusals are not the only path.
# cmake -DGENERATOR=<fbngrad_generator> -DWORK=<dir> -P check_generator_knobs.cmake
set(_common -g fused_batch_norm_grad -e stmt y_backprop.type=float32 x.type=float32 x_backprop.type=float32)
set(_x86 target=x86-64-linux-avx-avx2-f16c-fma-sse41-avx512-avx512_skylake-strict_float-user_context-no_runtime)
file(MAKE_DIRECTORY ${WORK})

# expect(<name> <should build> <message if refused> <generator params...>); x86 unless a target= is given.
function(expect name should_build expected_message)
    set(params ${ARGN})
    if (NOT params MATCHES "target=")
        list(APPEND params ${_x86})
    endif ()
    execute_process(COMMAND ${GENERATOR} ${_common} -o ${WORK} -f ${name} ${params}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if (should_build)
        if (NOT rc EQUAL 0)
            message(FATAL_ERROR "${name} (${ARGN}) should build, but exited ${rc}:\n${err}")
        endif ()
        return()
    endif ()
    if (rc EQUAL 0)
        message(FATAL_ERROR "${name} (${ARGN}) built, but should have been refused")
    endif ()
    string(FIND "${out}${err}" "${expected_message}" at)
    if (at EQUAL -1)
        message(FATAL_ERROR "${name} (${ARGN}) was refused without the message \"${expected_message}\":\n${err}")
    endif ()
    message(STATUS "${name}: refused as expected")
endfunction()

expect(nchw_fused TRUE "" layout=nchw training=true fuse_passes=2)
expect(nchw_two_pass TRUE "" layout=nchw training=false fuse_passes=1 sum_pass_order=2)
expect(nhwc_infer_one_pass TRUE "" layout=nhwc training=false fuse_passes=2)
expect(nhwc_train_one_pass FALSE "fuse_passes=2 is for NCHW or NHWC inference" layout=nhwc training=true fuse_passes=2)
expect(arm_fused FALSE "fuse_passes=2 is scheduled for x86 CPUs only" layout=nchw training=true fuse_passes=2
       target=arm-64-linux-no_runtime-strict_float)
# CUDA: the NCHW fused op's single pass (the cuda_plane rows), nothing else.
set(_cuda target=x86-64-linux-cuda-cuda_capability_70-strict_float-user_context-no_runtime)
expect(cuda_nchw_one_pass TRUE "" layout=nchw training=true fuse_passes=2 ${_cuda})
expect(cuda_nhwc_one_pass FALSE "fuse_passes=2 on a GPU is the NCHW fused op's single pass" layout=nhwc
       training=false fuse_passes=2 ${_cuda})
expect(fuse_3 FALSE "fuse_passes: 0, 1 or 2, not 3" layout=nchw training=true fuse_passes=3)
expect(order_3 FALSE "sum_pass_order: 0, 1 or 2, not 3" layout=nhwc training=true sum_pass_order=3)
