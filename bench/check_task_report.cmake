# bench_task_report: fbngrad_bench --fbngrad_task_report on two small cases, then
# task_model.py on the report: every loop must meet the many-core rule there
# (fbngrad-omp, fbngrad on a runner of the bench's own, runs beside them and must
# stay out of the report: the report's timing runner would replace its runner);
# then the same report with --fbngrad_task_order=reverse and with
# --fbngrad_task_thread=worker (the same loops).
# cmake -DBENCH=... -DPYTHON=... -DMODEL=.../task_model.py -DOUT=tasks.json -P check_task_report.cmake
file(REMOVE ${OUT})
execute_process(
    COMMAND ${BENCH} "--benchmark_filter=^fbngrad(-omp)?/float32/(NHWC|NCHW)/train/1,56,56,24/real_time$"
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
file(READ ${OUT} report)
if (report MATCHES "fbngrad-omp")
    message(FATAL_ERROR "the task report timed fbngrad-omp, which runs on a runner of its own")
endif ()
# steal_ms: the VM's steal time over the report (-1 where /proc/stat says nothing),
# which task_model.py prints below the table.
string(JSON steal ERROR_VARIABLE json_err GET "${report}" steal_ms)
if (json_err OR NOT steal MATCHES "^(-1|[0-9]+)(\\.[0-9]+)?$")
    message(FATAL_ERROR "steal_ms missing or not a time: '${steal}' ${json_err}")
endif ()
if (NOT model_out MATCHES "(Steal time|Disturbed: the VM's steal time) ")
    message(FATAL_ERROR "task_model.py said nothing of the VM's steal time")
endif ()
string(JSON order GET "${report}" task_order)
if (NOT order STREQUAL "index")
    message(FATAL_ERROR "task_order: want index by default, got '${order}'")
endif ()
# gap_us: the time outside the loops where it falls, one value more than loops,
# each of them a time (not negative); task_model.py --outside reads them.
string(JSON n LENGTH "${report}" benchmarks)
math(EXPR last "${n} - 1")
foreach (b RANGE ${last})
    string(JSON nl LENGTH "${report}" benchmarks ${b} loops)
    string(JSON ng ERROR_VARIABLE json_err LENGTH "${report}" benchmarks ${b} gap_us)
    math(EXPR want "${nl} + 1")
    if (json_err OR NOT ng EQUAL want)
        message(FATAL_ERROR "benchmark ${b}: gap_us has '${ng}' values for ${nl} loops ${json_err}")
    endif ()
    math(EXPR lastg "${ng} - 1")
    foreach (g RANGE ${lastg})
        string(JSON gap GET "${report}" benchmarks ${b} gap_us ${g})
        if (gap MATCHES "^-")
            message(FATAL_ERROR "benchmark ${b}: gap_us[${g}] = ${gap}, negative")
        endif ()
    endforeach ()
endforeach ()
# round_trip_ns: a cache line from the calling thread to the timing runner's
# worker and back, taken before each benchmark's calls: a time, above zero, and
# task_model.py prints the median under the table.
function(expect_round_trip json b what)
    string(JSON trip ERROR_VARIABLE json_err GET "${json}" benchmarks ${b} round_trip_ns)
    if (json_err OR NOT trip MATCHES "^[0-9]+(\\.[0-9]+)?$" OR trip EQUAL 0)
        message(FATAL_ERROR "${what}: round_trip_ns missing or not a time above 0: '${trip}' ${json_err}")
    endif ()
endfunction()
foreach (b RANGE ${last})
    expect_round_trip("${report}" ${b} "benchmark ${b}")
endforeach ()
if (NOT model_out MATCHES "Round trip of a cache line from the calling thread to the worker and back: [0-9]+ ns")
    message(FATAL_ERROR "task_model.py said nothing of the round trip")
endif ()
execute_process(COMMAND ${PYTHON} ${MODEL} ${OUT} --outside OUTPUT_VARIABLE outside_out ERROR_VARIABLE outside_err
                RESULT_VARIABLE rc)
message(STATUS "${outside_out}${outside_err}")
if (NOT rc EQUAL 0 OR NOT outside_out MATCHES "float32 NCHW train 1,56,56,24 +[0-9.]+ +[0-9.]+ +[0-9.]+ %")
    message(FATAL_ERROR "task_model.py --outside failed (exit ${rc}) or printed no row")
endif ()
# call_us is the tasks' time plus the gaps': the model's serial share is the
# gaps' share of the call, nothing of the timing runner's own time.
foreach (layout NHWC NCHW)
    string(REGEX MATCH "float32 ${layout} train 1,56,56,24 +[0-9, ]+ +[0-9, ]+ +yes +([0-9.]+ %)" row "${model_out}")
    set(serial "${CMAKE_MATCH_1}")
    string(REGEX MATCH "float32 ${layout} train 1,56,56,24 +[0-9.]+ +[0-9.]+ +([0-9.]+ %)" row "${outside_out}")
    if (serial STREQUAL "" OR NOT serial STREQUAL CMAKE_MATCH_1)
        message(FATAL_ERROR "${layout}: the model's serial share '${serial}' is not the gaps' '${CMAKE_MATCH_1}'")
    endif ()
endforeach ()

# A second report of the same two cases, with `flag`: the same loops and
# tasks (each time kept at its index, the first one measured), and `key` = `want`.
function(check_second_report flag key want)
    set(second ${OUT}.${want}.json)
    file(REMOVE ${second})
    execute_process(
        COMMAND ${BENCH} "--benchmark_filter=^fbngrad(-omp)?/float32/(NHWC|NCHW)/train/1,56,56,24/real_time$"
                --benchmark_min_time=0.01 --fbngrad_task_report=${second} ${flag}
        OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc)
    if (NOT rc EQUAL 0)
        message(FATAL_ERROR "fbngrad_bench ${flag} failed (exit ${rc})")
    endif ()
    file(READ ${second} other)
    string(JSON got GET "${other}" ${key})
    string(JSON n LENGTH "${report}" benchmarks)
    string(JSON n_other LENGTH "${other}" benchmarks)
    if (NOT got STREQUAL want OR NOT n EQUAL n_other OR n EQUAL 0)
        message(FATAL_ERROR "the report with ${flag}: ${key} '${got}', ${n_other} benchmarks against ${n}")
    endif ()
    math(EXPR last "${n} - 1")
    foreach (b RANGE ${last})
        string(JSON loops GET "${report}" benchmarks ${b} loops)
        string(JSON loops_other GET "${other}" benchmarks ${b} loops)
        string(JSON nl LENGTH "${loops}")
        string(JSON nl_other LENGTH "${loops_other}")
        if (NOT nl EQUAL nl_other)
            message(FATAL_ERROR "benchmark ${b}: ${nl} loops by default, ${nl_other} with ${flag}")
        endif ()
        math(EXPR lastl "${nl} - 1")
        foreach (l RANGE ${lastl})
            string(JSON t GET "${loops}" ${l} tasks)
            string(JSON t_other GET "${loops_other}" ${l} tasks)
            string(JSON first_other GET "${loops_other}" ${l} task_us 0)
            if (NOT t EQUAL t_other OR NOT first_other GREATER 0)
                message(FATAL_ERROR "benchmark ${b} loop ${l}: ${t} tasks, ${t_other} with ${flag} (task 0: ${first_other} us)")
            endif ()
        endforeach ()
    endforeach ()
    set(other "${other}" PARENT_SCOPE)
endfunction()

# --fbngrad_task_order=reverse: the tasks last to first.
check_second_report(--fbngrad_task_order=reverse task_order reverse)

# --fbngrad_task_thread=worker: the tasks on the runner's own thread.
string(JSON thread GET "${report}" task_thread)
if (NOT thread STREQUAL "caller")
    message(FATAL_ERROR "by default: want the tasks on the caller; got '${thread}'")
endif ()
check_second_report(--fbngrad_task_thread=worker task_thread worker)
expect_round_trip("${other}" 0 "the worker's report")

# fbngrad_bench's own flags (CLI11): a bad value is one line on stderr that names
# the flag, and exit status non-zero, before any benchmark runs.
function(expect_refusal flag want)
    execute_process(COMMAND ${BENCH} ${flag} --benchmark_list_tests OUTPUT_VARIABLE out ERROR_VARIABLE err
                    RESULT_VARIABLE rc)
    if (rc EQUAL 0 OR NOT err MATCHES "${want}" OR out MATCHES "fbngrad/")
        message(FATAL_ERROR "${flag}: want a refusal matching '${want}', got exit ${rc}: ${err}")
    endif ()
endfunction()
expect_refusal(--fbngrad_task_order=backwards "--fbngrad_task_order: backwards not in {index,reverse}")
expect_refusal(--fbngrad_task_thread=elsewhere "--fbngrad_task_thread: elsewhere not in {caller,worker}")
expect_refusal(--fbngrad_shapes=some "--fbngrad_shapes: some not in {catalogue,sweep,all}")
expect_refusal(--fbngrad_thread_counts=1,0 "--fbngrad_thread_counts: Value 0 not in range 1 to")
expect_refusal(--fbngrad_task_repeats=x "--fbngrad_task_repeats: Value x not in range 1 to")
expect_refusal(--fbngrad_task_report= "--fbngrad_task_report= wants a value")
expect_refusal(--fbngrad_unknown=1 "unrecognized command-line flag: --fbngrad_unknown=1")
# --help: the bench's own flags, then Google Benchmark's; nothing runs.
execute_process(COMMAND ${BENCH} --help OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if (NOT rc EQUAL 0 OR NOT out MATCHES "--fbngrad_task_thread" OR NOT out MATCHES "--benchmark_filter"
    OR err MATCHES "default subset")
    message(FATAL_ERROR "--help: want both sets of flags and exit 0, got exit ${rc}: ${out}${err}")
endif ()
