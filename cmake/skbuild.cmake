# Under scikit-build-core (pip install of the Python package, pyproject.toml): find Halide's CMake
# package in the halide wheel of the Python that builds, unless Halide_DIR is given.
if (SKBUILD AND NOT Halide_DIR)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    execute_process(
        COMMAND ${Python3_EXECUTABLE} -c
                "import halide, os; print(os.path.join(os.path.dirname(halide.__file__), 'lib64', 'cmake', 'Halide'))"
        OUTPUT_VARIABLE _fbngrad_halide_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _fbngrad_rc)
    if (_fbngrad_rc EQUAL 0)
        set(Halide_DIR "${_fbngrad_halide_dir}" CACHE PATH "Halide's CMake package (from the halide wheel)")
    endif ()
endif ()
