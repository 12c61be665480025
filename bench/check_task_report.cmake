# bench_task_report: fbngrad_bench --fbngrad_task_report on two small cases, then
# task_model.py on the report: every loop must meet the many-core rule there.
# cmake -DBENCH=... -DPYTHON=... -DMODEL=.../task_model.py -DOUT=tasks.json -P check_task_report.cmake
file(REMOVE ${OUT})
execute_process(
    COMMAND ${BENCH} "--benchmark_filter=^fbngrad/float32/(NHWC|NCHW)/train/1,56,56,24/real_time$"
            --benchmark_min_time=0.01 --fbngrad_task_report=${OUT}
    OUTPUT_VARIABLE bench_out ERROR_VARIABLE bench_err RESULT_VARIABLE rc)
message(STATUS "${bench_out}${bench_err}")
if (NOT rc EQUAL 0 OR bench_out MATCHES "ERROR OCCURRED" OR NOT bench_out MATCHES "min_tasks=")
    message(FATAL_ERROR "fbngrad_bench --fbngrad_task_report failed (exit ${rc}) or reported no task counters")
endif ()
execute_process(COMMAND ${PYTHON} ${MODEL} ${OUT} OUTPUT_VARIABLE model_out ERROR_VARIABLE model_err
                RESULT_VARIABLE rc)
message(STATUS "${model_out}${model_err}")
if (NOT rc EQUAL 0)
    message(FATAL_ERROR "task_model.py failed (exit ${rc})")
endif ()
foreach (layout NHWC NCHW)
    if (NOT model_out MATCHES "float32 ${layout} train 1,56,56,24 +[0-9, ]+ +4(, [0-9]+)* +yes")
        message(FATAL_ERROR "${layout}: no row, or its loops offer fewer than the rule's 4 tasks")
    endif ()
endforeach ()
# The timing runner's own time a task (subtracted from the time outside the
# tasks, task_report.cpp): measured, and plausible (a few clock reads).
file(READ ${OUT} report)
string(JSON overhead ERROR_VARIABLE json_err GET "${report}" runner_overhead_us_per_task)
if (json_err OR overhead LESS 0 OR overhead GREATER 5)
    message(FATAL_ERROR "runner_overhead_us_per_task missing or implausible: '${overhead}' ${json_err}")
endif ()
