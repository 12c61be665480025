# fbngrad_add_single_archive(<target> EXPORTS <pattern>... PARTS <static-library>...)
#
# Makes <target>, a STATIC library holding ONE relocatable object, fbngrad.o,
# built from every object of PARTS (the API objects, every Halide variant, the
# one Halide runtime) so that consumers get a single self-contained
# libfbngrad.a, with no dependency on libHalide or LLVM.
#
# Symbol hygiene: only symbols matching EXPORTS (shell wildcards, e.g.
# fbngrad_*) stay global; everything else that the parts define (the variants
# fbng_*, the C++ internals fbngrad::..., the inline C++ library code they
# instantiated, and the Halide runtime halide_* / Halide::Runtime::Internal::*)
# becomes local. The archive can therefore be linked next to any other
# Halide-generated library and its own runtime, or next to code with the same
# inline C++ functions, without duplicate or mixed-up symbols. The Halide
# runtime in particular is private to fbngrad: its error handler, its thread
# pool and its allocator serve fbngrad's kernels only (docs/install.md).
#
# How: `ld -r --force-group-allocation` links all the parts into one object
# (the option dissolves COMDAT groups, so that a group of ours can never be
# discarded in favour of a consumer's same-named group while our now-local
# symbols still point into it), then `objcopy --wildcard --keep-global-symbols`
# localizes every defined symbol not on the export list (undefined references
# such as memcpy or pthread_create stay global). Compiler flags such as
# -fvisibility=hidden would not do this: hidden symbols are still global to the
# static linker. ELF toolchains only (Linux, any architecture; the toolchain's
# own ld and objcopy are used, so cross builds make their platform's archive).
function(fbngrad_add_single_archive target)
    cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "EXPORTS;PARTS")
    if (NOT ARG_EXPORTS OR NOT ARG_PARTS)
        message(FATAL_ERROR "fbngrad_add_single_archive(${target}): EXPORTS and PARTS are both required")
    endif ()
    if (NOT CMAKE_EXECUTABLE_FORMAT STREQUAL "ELF" OR NOT CMAKE_LINKER OR NOT CMAKE_OBJCOPY)
        message(FATAL_ERROR "fbngrad_add_single_archive(${target}): needs an ELF toolchain with ld and objcopy "
                            "(CMAKE_EXECUTABLE_FORMAT='${CMAKE_EXECUTABLE_FORMAT}', CMAKE_LINKER='${CMAKE_LINKER}', "
                            "CMAKE_OBJCOPY='${CMAKE_OBJCOPY}')")
    endif ()

    # Exactly one Halide runtime: the one every variant was built against
    # (add_halide_library records it as Halide_LIBRARY_RUNTIME_TARGET).
    set(runtimes "")
    set(variant_runtimes "")
    foreach (part IN LISTS ARG_PARTS)
        if (NOT TARGET "${part}")
            message(FATAL_ERROR "fbngrad_add_single_archive(${target}): '${part}' is not a target")
        endif ()
        get_property(is_runtime TARGET "${part}" PROPERTY Halide_RT_TARGETS SET)
        if (is_runtime)
            list(APPEND runtimes "${part}")
        endif ()
        get_property(rt TARGET "${part}" PROPERTY Halide_LIBRARY_RUNTIME_TARGET)
        if (rt)
            list(APPEND variant_runtimes "${rt}")
        endif ()
    endforeach ()
    list(REMOVE_DUPLICATES variant_runtimes)
    # GCC gives static locals of inline functions and static members of
    # templates (e.g. libstdc++'s std::to_string digit table) STB_GNU_UNIQUE
    # binding, which objcopy cannot make local; -fno-gnu-unique makes them
    # ordinary weak symbols, which it can. Only fbngrad's own C++ parts are
    # compiled here (Halide writes the variant and runtime objects itself).
    # -ffunction-sections -fdata-sections: each function and datum in a
    # section of its own, as Halide already emits the variants and its runtime,
    # so that a consumer's `-Wl,--gc-sections` drops what it never reaches (a
    # program that never calls the split phase drops its code and kernels;
    # `ld -r` below keeps differently named sections apart). Without them the
    # API's one .text section reached every kernel through the dispatch table.
    foreach (part IN LISTS ARG_PARTS)
        get_property(is_halide_library TARGET "${part}" PROPERTY Halide_LIBRARY_RUNTIME_TARGET SET)
        get_property(is_imported TARGET "${part}" PROPERTY IMPORTED)
        if (NOT is_halide_library AND NOT is_imported AND NOT "${part}" IN_LIST runtimes)
            target_compile_options("${part}" PRIVATE $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-gnu-unique>
                                                     -ffunction-sections -fdata-sections)
        endif ()
    endforeach ()
    list(LENGTH runtimes n_runtimes)
    if (NOT n_runtimes EQUAL 1 OR NOT variant_runtimes STREQUAL runtimes)
        message(FATAL_ERROR "fbngrad_add_single_archive(${target}): the parts must hold exactly one Halide runtime, "
                            "the one every variant uses; parts have [${runtimes}], variants use [${variant_runtimes}]")
    endif ()

    set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.archive")
    set(exports_file "${dir}/exports.txt")
    set(all_object "${dir}/all_parts.o")
    set(object "${dir}/fbngrad.o")
    list(JOIN ARG_EXPORTS "\n" exports_text)
    file(CONFIGURE OUTPUT "${exports_file}" CONTENT "${exports_text}\n" @ONLY)

    # A Halide variant's constant data (its metadata, and for a CUDA variant
    # its PTX: 1.4 MB in all on x86-64) is in the plain .rodata and
    # .data.rel.ro sections, which `ld -r` would merge across all the variants
    # into one section that any reference keeps whole. Each variant's copy
    # gets sections named after it first, so that a consumer's --gc-sections
    # keeps only the data of the variants the program reaches.
    set(part_files "")
    set(rename_commands "")
    foreach (part IN LISTS ARG_PARTS)
        get_property(is_variant TARGET "${part}" PROPERTY Halide_LIBRARY_RUNTIME_TARGET SET)
        if (is_variant)
            set(renamed "${dir}/parts/lib${part}.a")
            list(APPEND rename_commands
                 COMMAND "${CMAKE_OBJCOPY}" --rename-section .rodata=.rodata.${part}
                         --rename-section .data.rel.ro=.data.rel.ro.${part} "$<TARGET_FILE:${part}>" "${renamed}")
            list(APPEND part_files "${renamed}")
        else ()
            list(APPEND part_files "$<TARGET_FILE:${part}>")
        endif ()
    endforeach ()
    add_custom_command(
        OUTPUT "${object}"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}/parts"
        ${rename_commands}
        # --whole-archive: every object of every part, whether or not
        # something references it yet (each variant is reached only through
        # the dispatcher's table).
        COMMAND "${CMAKE_LINKER}" -r --force-group-allocation -o "${all_object}"
                --whole-archive ${part_files} --no-whole-archive
        COMMAND "${CMAKE_OBJCOPY}" --wildcard "--keep-global-symbols=${exports_file}" "${all_object}" "${object}"
        COMMAND "${CMAKE_COMMAND}" -E rm -rf "${all_object}" "${dir}/parts"
        DEPENDS ${ARG_PARTS} "${exports_file}"
        COMMENT "Linking the parts of ${target} into one object; exporting only: ${ARG_EXPORTS}"
        VERBATIM)

    add_library(${target} STATIC "${object}")
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
    # Target-level order too: in a cross build the variants are IMPORTED
    # libraries whose generator runs are their dependencies, followed from here.
    add_dependencies(${target} ${ARG_PARTS})
    # The object is C++ inside, but CMake cannot tell from an object file, so
    # a consumer that links with the C compiler is given the C++ standard
    # library explicitly (this survives install(EXPORT), unlike LINKER_LANGUAGE).
    fbngrad_cxx_runtime_libraries(cxx_libs)
    target_link_libraries(${target} INTERFACE "$<$<LINK_LANGUAGE:C>:${cxx_libs}>")
endfunction()

# fbngrad_cxx_runtime_libraries(<out>): what a C link must add to link C++
# objects: the libraries the C++ compiler links implicitly and the C compiler
# does not (GCC: stdc++ m; Clang with libc++: c++ ...). Used for the archive's
# interface and for fbngrad.pc (cmake/install.cmake).
function(fbngrad_cxx_runtime_libraries out)
    set(libs ${CMAKE_CXX_IMPLICIT_LINK_LIBRARIES})
    if (CMAKE_C_IMPLICIT_LINK_LIBRARIES)
        list(REMOVE_ITEM libs ${CMAKE_C_IMPLICIT_LINK_LIBRARIES})
    endif ()
    set(${out} ${libs} PARENT_SCOPE)
endfunction()
