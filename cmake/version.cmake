# The version has one source of truth: the FBNGRAD_VERSION_* macros of the
# public header, which is what consumers compile against and what
# fbngrad_version() stringifies. The top-level CMakeLists.txt includes this
# file before project() and passes FBNGRAD_VERSION to project(VERSION), so the
# CMake package version, the pkg-config version and the header cannot drift
# apart (fmt reads its version from its header the same way).
set(_fbngrad_header "${CMAKE_CURRENT_LIST_DIR}/../src/include/fbngrad/fbngrad.h")
file(STRINGS "${_fbngrad_header}" _fbngrad_version_lines
     REGEX "^#define FBNGRAD_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+ *$")
set(FBNGRAD_VERSION "")
foreach (part MAJOR MINOR PATCH)
    set(_fbngrad_value "")
    foreach (line IN LISTS _fbngrad_version_lines)
        if (line MATCHES "^#define FBNGRAD_VERSION_${part} +([0-9]+)")
            set(_fbngrad_value "${CMAKE_MATCH_1}")
        endif ()
    endforeach ()
    if (_fbngrad_value STREQUAL "")
        message(FATAL_ERROR "cmake/version.cmake: no '#define FBNGRAD_VERSION_${part} <number>' in ${_fbngrad_header}")
    endif ()
    list(APPEND FBNGRAD_VERSION "${_fbngrad_value}")
endforeach ()
list(JOIN FBNGRAD_VERSION "." FBNGRAD_VERSION)
unset(_fbngrad_header)
unset(_fbngrad_version_lines)
unset(_fbngrad_value)
