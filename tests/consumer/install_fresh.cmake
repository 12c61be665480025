# ctest package_install: installs the build tree into an empty prefix, as a
# consumer would (`cmake --install`), for the consumer_* and
# package_archive_symbols tests.
# usage: cmake -DBUILD_DIR=<build> -DPREFIX=<prefix> -P install_fresh.cmake
cmake_minimum_required(VERSION 3.20)
foreach (var BUILD_DIR PREFIX)
    if (NOT DEFINED ${var})
        message(FATAL_ERROR "install_fresh.cmake: -D${var}=... is required")
    endif ()
endforeach ()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc)
if (NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed: ${rc}")
endif ()
file(GLOB_RECURSE installed RELATIVE "${PREFIX}" "${PREFIX}/*")
list(SORT installed)
list(JOIN installed "\n  " listing)
message(STATUS "installed under ${PREFIX}:\n  ${listing}")
