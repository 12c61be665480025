# ctest package_archive_symbols: the installed libfbngrad.a
#  - holds exactly one object (the API, every variant and one Halide runtime, linked together),
#  - defines, as global symbols, only the API: names starting with fbngrad_, and among them
#    every function the installed C headers declare,
#  - carries its Halide runtime (defined, local) and needs nothing from libHalide:
#    no undefined halide_* or Halide:: symbols.
# usage: cmake -DARCHIVE=<libfbngrad.a> -DHEADERS=<include/fbngrad> -DNM=<nm> -P check_archive_symbols.cmake
cmake_minimum_required(VERSION 3.20)  # policies NEW in -P mode too (IN_LIST)
foreach (var ARCHIVE HEADERS NM)
    if (NOT DEFINED ${var})
        message(FATAL_ERROR "check_archive_symbols.cmake: -D${var}=... is required")
    endif ()
endforeach ()
if (NOT EXISTS "${ARCHIVE}")
    message(FATAL_ERROR "no archive at ${ARCHIVE}")
endif ()

set(problems "")
function(nm_lines out)  # nm_lines(<out> <nm option>...): nm's output as a list of lines
    execute_process(COMMAND "${NM}" ${ARGN} "${ARCHIVE}" OUTPUT_VARIABLE text RESULT_VARIABLE rc)
    if (NOT rc EQUAL 0)
        message(FATAL_ERROR "${NM} ${ARGN} ${ARCHIVE} failed: ${rc}")
    endif ()
    string(REPLACE ";" "\\;" text "${text}")
    string(REPLACE "\n" ";" text "${text}")
    set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Members: nm prints "<member>:" before each member's symbols.
nm_lines(all_lines --defined-only)
set(members "")
foreach (line IN LISTS all_lines)
    if (line MATCHES "^([^ ]+):$")
        list(APPEND members "${CMAKE_MATCH_1}")
    endif ()
endforeach ()
list(LENGTH members n_members)
if (NOT n_members EQUAL 1)
    string(REPLACE ";" ", " members "${members}")
    list(APPEND problems "expected one object in the archive, found ${n_members}: ${members}")
endif ()

# Global definitions.
nm_lines(global_lines --defined-only --extern-only)
set(globals "")
foreach (line IN LISTS global_lines)
    if (line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) (.+)$")
        set(kind "${CMAKE_MATCH_1}")
        set(name "${CMAKE_MATCH_2}")
        list(APPEND globals "${name}")
        if (NOT name MATCHES "^fbngrad_")
            list(APPEND problems "exported symbol outside the API: ${kind} ${name}")
        endif ()
    endif ()
endforeach ()
list(LENGTH globals n_globals)

# Every function the C headers declare must be defined.
file(GLOB headers "${HEADERS}/*.h")
if (NOT headers)
    list(APPEND problems "no C headers in ${HEADERS}")
endif ()
foreach (header IN LISTS headers)
    file(READ "${header}" text)
    string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" text "${text}")  # drop /* comments */
    string(REGEX REPLACE "//[^\n]*" "" text "${text}")
    string(REGEX MATCHALL "fbngrad_[a-z0-9_]+[ \t\n]*\\(" calls "${text}")
    foreach (call IN LISTS calls)
        string(REGEX REPLACE "[ \t\n]*\\($" "" fn "${call}")
        if (NOT fn IN_LIST globals)
            list(APPEND problems "${header} declares ${fn}, which the archive does not export")
        endif ()
    endforeach ()
endforeach ()

# The Halide runtime is inside (defined, now local) and nothing of Halide is left undefined.
set(have_runtime NO)
foreach (line IN LISTS all_lines)
    if (line MATCHES " [tT] halide_do_par_for$")
        set(have_runtime YES)
    endif ()
endforeach ()
if (NOT have_runtime)
    list(APPEND problems "the archive does not define halide_do_par_for: no Halide runtime inside")
endif ()
nm_lines(undefined_lines --undefined-only)
foreach (line IN LISTS undefined_lines)
    if (line MATCHES " U ((halide_|_ZN6Halide|_ZNK6Halide|llvm|_ZN4llvm).*)$")
        list(APPEND problems "undefined reference to ${CMAKE_MATCH_1}: the archive is not self-contained (it would need a Halide runtime, libHalide or LLVM)")
    endif ()
endforeach ()

if (problems)
    list(LENGTH problems n_problems)
    list(SUBLIST problems 0 25 report)  # the first 25: enough to see the pattern
    list(JOIN report "\n  " report)
    message(FATAL_ERROR "${ARCHIVE}: ${n_problems} problem(s), the first ones:\n  ${report}")
endif ()
file(SIZE "${ARCHIVE}" size)
list(JOIN globals " " globals)
message(STATUS "${ARCHIVE}: one object, ${size} bytes, exports only the API (${n_globals} symbols): ${globals}")
