# Sanitizer and fuzzing builds of fbngrad's own C++ code.
#
#   -DFBNGRAD_SANITIZE="address;undefined"   any list of -fsanitize= names (GCC or Clang);
#                                            "thread" for ThreadSanitizer
#   -DFBNGRAD_FUZZ=ON                        also build tests/fuzz (Clang's libFuzzer)
#
# fbngrad_enable_sanitizers() adds the flags to every target defined after it
# in the calling directory and below, so the top-level CMakeLists.txt calls it
# after add_subdirectory(generators): the glue (runtime/), the library, the
# reference, the CLI and the tests are instrumented; the generator is not (it
# only runs at build time) and neither are the Halide-generated variants and
# Halide's runtime (object files that Halide writes, never compiled here).
# Every sanitizer report is fatal (-fno-sanitize-recover=all): a test that hits
# undefined behaviour fails instead of printing a warning and passing.

set(FBNGRAD_SANITIZE "" CACHE STRING
    "Sanitizers for fbngrad's own code, a list (e.g. address;undefined, or thread); empty for none")
option(FBNGRAD_FUZZ "Build the libFuzzer target over the C API (tests/fuzz; needs Clang)" OFF)

function(fbngrad_enable_sanitizers)
    if (FBNGRAD_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
        message(FATAL_ERROR "FBNGRAD_FUZZ needs Clang (libFuzzer), got ${CMAKE_CXX_COMPILER_ID}; "
                            "configure with -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
    endif ()
    set(compile_flags "")
    set(link_flags "")
    if (FBNGRAD_SANITIZE)
        list(JOIN FBNGRAD_SANITIZE "," names)
        # Frame pointers and debug info: readable stack traces in the reports.
        list(APPEND compile_flags -fsanitize=${names} -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
        list(APPEND link_flags -fsanitize=${names})
        message(STATUS "fbngrad: sanitizers ${names} on the glue, library, reference, CLI and tests")
    endif ()
    if (FBNGRAD_FUZZ)
        # Coverage feedback for libFuzzer in everything the fuzzer calls; the
        # fuzzer executable itself links -fsanitize=fuzzer (tests/fuzz).
        list(APPEND compile_flags -fsanitize=fuzzer-no-link)
    endif ()
    add_compile_options(${compile_flags})
    add_link_options(${link_flags})
endfunction ()
