# What `cmake --install` puts under the prefix, for consumers:
#   include/fbngrad/*.h*                      the C and C++ API
#   <libdir>/libfbngrad.a                     one self-contained archive (cmake/single_archive.cmake)
#   <libdir>/cmake/fbngrad/                   find_package(fbngrad): the imported target fbngrad::fbngrad
#   <libdir>/pkgconfig/fbngrad.pc             pkg-config --cflags --libs fbngrad
# tests/consumer/ builds and runs programs against such an installed tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FBNGRAD_CMAKE_PACKAGE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/fbngrad")

install(TARGETS fbngrad
        EXPORT fbngradTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(EXPORT fbngradTargets
        NAMESPACE fbngrad::
        DESTINATION "${FBNGRAD_CMAKE_PACKAGE_DIR}")

configure_package_config_file(
    "${CMAKE_CURRENT_LIST_DIR}/fbngradConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/package/fbngradConfig.cmake"
    INSTALL_DESTINATION "${FBNGRAD_CMAKE_PACKAGE_DIR}")
# Before 1.0 a minor release may break the API, so 0.1.x satisfies a request
# for 0.1 but not for 0.2 or 0.0; from 1.0 on, the major version decides.
if (PROJECT_VERSION_MAJOR EQUAL 0)
    set(FBNGRAD_VERSION_COMPATIBILITY SameMinorVersion)
else ()
    set(FBNGRAD_VERSION_COMPATIBILITY SameMajorVersion)
endif ()
write_basic_package_version_file(
    "${PROJECT_BINARY_DIR}/package/fbngradConfigVersion.cmake"
    VERSION "${PROJECT_VERSION}"
    COMPATIBILITY ${FBNGRAD_VERSION_COMPATIBILITY})
install(FILES "${PROJECT_BINARY_DIR}/package/fbngradConfig.cmake"
              "${PROJECT_BINARY_DIR}/package/fbngradConfigVersion.cmake"
        DESTINATION "${FBNGRAD_CMAKE_PACKAGE_DIR}")

# pkg-config. The archive is static and C++ inside, so `--libs` (not only
# `--libs --static`) must name everything a plain C link needs: the C++
# standard library the compiler links implicitly (libstdc++ with GCC), which a
# `cc` link does not add, then pthreads, dl and m. The prefix is computed from
# the .pc file's own place (${pcfiledir}), so that the installed tree stays
# usable wherever `cmake --install --prefix` or DESTDIR puts it.
fbngrad_cxx_runtime_libraries(FBNGRAD_PC_CXX_LIBS)  # cmake/single_archive.cmake
set(FBNGRAD_PC_LIBS ${FBNGRAD_PC_CXX_LIBS} pthread ${CMAKE_DL_LIBS} m)
list(REVERSE FBNGRAD_PC_LIBS)  # keep the last of repeated names: -lstdc++ -lpthread -ldl -lm
list(REMOVE_DUPLICATES FBNGRAD_PC_LIBS)
list(REVERSE FBNGRAD_PC_LIBS)
list(TRANSFORM FBNGRAD_PC_LIBS PREPEND "-l")
list(JOIN FBNGRAD_PC_LIBS " " FBNGRAD_PC_LIBS)
foreach (dir LIBDIR INCLUDEDIR)
    if (IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
        set(FBNGRAD_PC_${dir} "${CMAKE_INSTALL_${dir}}")
    else ()
        set(FBNGRAD_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
    endif ()
endforeach ()
if (IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(FBNGRAD_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else ()
    file(RELATIVE_PATH FBNGRAD_PC_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
    string(REGEX REPLACE "/$" "" FBNGRAD_PC_PREFIX "\${pcfiledir}/${FBNGRAD_PC_PREFIX}")
endif ()
configure_file("${CMAKE_CURRENT_LIST_DIR}/fbngrad.pc.in" "${PROJECT_BINARY_DIR}/package/fbngrad.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/package/fbngrad.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
