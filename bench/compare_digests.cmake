# bench_inputs_match_tf_bench: fbngrad_bench --fbngrad_input_digest and tf_bench.py --digest
# must print the same digests (dtype layout shape digest, one line per case), i.e. the
# TensorFlow peer times the very inputs the C++ peers get.
# cmake -DBENCH=... -DPYTHON=... -DSCRIPT=.../tf_bench.py -P compare_digests.cmake
execute_process(COMMAND ${BENCH} --fbngrad_input_digest OUTPUT_VARIABLE cpp RESULT_VARIABLE rc1)
execute_process(COMMAND ${PYTHON} ${SCRIPT} --digest OUTPUT_VARIABLE py RESULT_VARIABLE rc2)
if (NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
    message(FATAL_ERROR "a digest command failed (fbngrad_bench: ${rc1}, tf_bench.py: ${rc2})")
endif ()
message(STATUS "fbngrad_bench:\n${cpp}tf_bench.py:\n${py}")
if (NOT cpp STREQUAL py OR cpp STREQUAL "")
    message(FATAL_ERROR "the inputs differ")
endif ()
