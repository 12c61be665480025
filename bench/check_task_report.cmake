# bench_task_report: fbngrad_bench --fbngrad_task_report on two small cases, then
# task_model.py on the report: every loop must meet the many-core rule there;
# then the same report with --fbngrad_task_order=reverse (the same loops).
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
string(JSON order GET "${report}" task_order)
if (NOT order STREQUAL "index")
    message(FATAL_ERROR "task_order: want index by default, got '${order}'")
endif ()

# --fbngrad_task_order=reverse: the same loops and tasks, each time kept at its index.
set(REV ${OUT}.reverse.json)
file(REMOVE ${REV})
execute_process(
    COMMAND ${BENCH} "--benchmark_filter=^fbngrad/float32/(NHWC|NCHW)/train/1,56,56,24/real_time$"
            --benchmark_min_time=0.01 --fbngrad_task_report=${REV} --fbngrad_task_order=reverse
    OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc)
if (NOT rc EQUAL 0)
    message(FATAL_ERROR "fbngrad_bench --fbngrad_task_order=reverse failed (exit ${rc})")
endif ()
file(READ ${REV} reversed)
string(JSON order GET "${reversed}" task_order)
string(JSON n LENGTH "${report}" benchmarks)
string(JSON n_rev LENGTH "${reversed}" benchmarks)
if (NOT order STREQUAL "reverse" OR NOT n EQUAL n_rev OR n EQUAL 0)
    message(FATAL_ERROR "the reversed report: task_order '${order}', ${n_rev} benchmarks against ${n}")
endif ()
math(EXPR last "${n} - 1")
foreach (b RANGE ${last})
    string(JSON loops GET "${report}" benchmarks ${b} loops)
    string(JSON loops_rev GET "${reversed}" benchmarks ${b} loops)
    string(JSON nl LENGTH "${loops}")
    string(JSON nl_rev LENGTH "${loops_rev}")
    if (NOT nl EQUAL nl_rev)
        message(FATAL_ERROR "benchmark ${b}: ${nl} loops in index order, ${nl_rev} reversed")
    endif ()
    math(EXPR lastl "${nl} - 1")
    foreach (l RANGE ${lastl})
        string(JSON t GET "${loops}" ${l} tasks)
        string(JSON t_rev GET "${loops_rev}" ${l} tasks)
        string(JSON first_rev GET "${loops_rev}" ${l} task_us 0)
        if (NOT t EQUAL t_rev OR NOT first_rev GREATER 0)
            message(FATAL_ERROR "benchmark ${b} loop ${l}: ${t} tasks, ${t_rev} reversed (task 0: ${first_rev} us)")
        endif ()
    endforeach ()
endforeach ()
execute_process(COMMAND ${BENCH} --fbngrad_task_order=backwards OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
if (rc EQUAL 0 OR NOT err MATCHES "wants index or reverse")
    message(FATAL_ERROR "--fbngrad_task_order=backwards: want a clear refusal, got exit ${rc}: ${err}")
endif ()
