# The third-party libraries of the tests and the CLI, for a cross build
# (included from the top-level CMakeLists.txt when CMAKE_CROSSCOMPILING).
#
# Debian's -dev packages of these libraries are built for the host (x86-64)
# only, so a cross build cannot link their binaries. It does not need them:
#   * GoogleTest: Debian's `googletest` package ships the sources in
#     /usr/src/googletest; they are built here with the cross compiler.
#   * CLI11 and nlohmann-json are header-only; {fmt} is header-only with
#     FMT_HEADER_ONLY. Their headers are the same for every architecture.
# They are defined here under the names the native build's find_package()
# calls give (GTest::gtest_main, CLI11::CLI11, fmt::fmt,
# nlohmann_json::nlohmann_json); tests/ and src/cli/ only call find_package()
# when the target does not exist yet.
#
# Google Benchmark has no sources in Debian: configure a cross build with
# -DFBNGRAD_BUILD_BENCH=OFF.

set(FBNGRAD_GTEST_SOURCE_DIR /usr/src/googletest CACHE PATH
    "GoogleTest's sources (Debian package googletest), built for the target in a cross build")
set(FBNGRAD_HOST_INCLUDE_DIR /usr/include CACHE PATH
    "Where the host has the headers of CLI11 (CLI/), {fmt} (fmt/) and nlohmann-json (nlohmann/)")

if (FBNGRAD_BUILD_TESTS AND NOT TARGET GTest::gtest_main)
    if (NOT EXISTS "${FBNGRAD_GTEST_SOURCE_DIR}/googletest/CMakeLists.txt")
        message(FATAL_ERROR "fbngrad: a cross build with tests needs GoogleTest's sources in "
                            "FBNGRAD_GTEST_SOURCE_DIR=${FBNGRAD_GTEST_SOURCE_DIR} (Debian: apt-get install googletest), "
                            "or -DFBNGRAD_BUILD_TESTS=OFF")
    endif ()
    set(BUILD_GMOCK OFF CACHE BOOL "fbngrad: GoogleTest without GoogleMock" FORCE)
    set(INSTALL_GTEST OFF CACHE BOOL "fbngrad: GoogleTest is only built, not installed" FORCE)
    # googletest 1.12 asks for CMake 3.5's policies, which CMake 4 warns about: give it 3.10's.
    set(CMAKE_POLICY_VERSION_MINIMUM 3.10)
    add_subdirectory("${FBNGRAD_GTEST_SOURCE_DIR}" "${PROJECT_BINARY_DIR}/googletest" EXCLUDE_FROM_ALL SYSTEM)
    unset(CMAKE_POLICY_VERSION_MINIMUM)
    if (NOT TARGET GTest::gtest_main)  # googletest's own CMake defines these names in newer releases
        add_library(GTest::gtest ALIAS gtest)
        add_library(GTest::gtest_main ALIAS gtest_main)
    endif ()
endif ()

if (FBNGRAD_BUILD_CLI)
    # Only the three libraries' own directories, not all of the host's
    # /usr/include: that would put the host's C library headers in front of
    # the target's.
    set(_fbngrad_host_headers "${PROJECT_BINARY_DIR}/host-headers")
    foreach (dir CLI fmt nlohmann)
        if (NOT IS_DIRECTORY "${FBNGRAD_HOST_INCLUDE_DIR}/${dir}")
            message(FATAL_ERROR "fbngrad: the CLI needs ${FBNGRAD_HOST_INCLUDE_DIR}/${dir} (Debian: libcli11-dev, "
                                "libfmt-dev, nlohmann-json3-dev), or -DFBNGRAD_BUILD_CLI=OFF")
        endif ()
        file(MAKE_DIRECTORY "${_fbngrad_host_headers}")
        file(CREATE_LINK "${FBNGRAD_HOST_INCLUDE_DIR}/${dir}" "${_fbngrad_host_headers}/${dir}" SYMBOLIC)
    endforeach ()
    foreach (lib CLI11::CLI11 fmt::fmt nlohmann_json::nlohmann_json)
        if (NOT TARGET ${lib})
            add_library(${lib} INTERFACE IMPORTED)
            target_include_directories(${lib} SYSTEM INTERFACE "${_fbngrad_host_headers}")
        endif ()
    endforeach ()
    target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY=1)
endif ()
