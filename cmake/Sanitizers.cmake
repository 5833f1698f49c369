# LOWBIT_SANITIZE: the ASan+UBSan configuration with the libFuzzer targets
# (fuzz/, docs/testing.md). tools/run-sanitizers configures it with
# clang++-22 in build-asan/.
#
# Every lowbit target is compiled with AddressSanitizer and
# UndefinedBehaviorSanitizer, and with libFuzzer's coverage instrumentation
# (fuzzer-no-link), so the fuzz targets see coverage inside the libraries
# they call. The coverage callbacks have weak defaults in the sanitizer
# runtime, so the Catch2 tests and the tools link without libFuzzer.
# LLVM and MLIR are Debian's uninstrumented g++ builds: clang must use the
# same libstdc++ (its default on Debian), and errors inside them are not
# seen, only their effect on lowbit's memory.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "LOWBIT_SANITIZE needs clang (libFuzzer): configure "
                      "with -DCMAKE_CXX_COMPILER=clang++-22, or run "
                      "tools/run-sanitizers")
endif()

# -fno-sanitize-recover: a finding stops the process with a non-zero exit,
# so ctest fails instead of printing a report and passing.
set(LOWBIT_SANITIZER_FLAGS
  -fsanitize=address,undefined
  -fno-sanitize-recover=all
  -fno-omit-frame-pointer)
add_compile_options(${LOWBIT_SANITIZER_FLAGS} -fsanitize=fuzzer-no-link -g1)

# -O1 instead of the Release -O3 (NDEBUG kept, so asserts are as in the
# normal build): the level ASan's documentation recommends, and the full
# sanitized build (hours on two cores at -O3) compiles faster. It weakens
# no check: UBSan's checks are inserted by the front end and ASan's after
# the optimizer, which at a higher level only removes the accesses and
# checks it proves redundant.
foreach(config RELEASE RELWITHDEBINFO MINSIZEREL)
  string(REGEX REPLACE "(^| )-O[23s]( |$)" "\\1-O1\\2"
         CMAKE_CXX_FLAGS_${config} "${CMAKE_CXX_FLAGS_${config}}")
  string(REGEX REPLACE "(^| )-O[23s]( |$)" "\\1-O1\\2"
         CMAKE_C_FLAGS_${config} "${CMAKE_C_FLAGS_${config}}")
endforeach()
add_link_options(${LOWBIT_SANITIZER_FLAGS})

# The runtime as a shared library (-shared-libsan, found through an rpath),
# for the Python module's tests: Debian's python3 is not instrumented, so
# they load the instrumented module with the runtime preloaded
# (LOWBIT_SANITIZER_PYTHON_ENV below), and the `lowbit` processes they start
# inherit LD_PRELOAD. An executable with the static runtime refuses to start
# beside a preloaded one ("incompatible ASan runtimes"); with the shared one
# both are the same library.
execute_process(
  COMMAND ${CMAKE_CXX_COMPILER}
          -print-file-name=libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so
  OUTPUT_VARIABLE LOWBIT_ASAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT IS_ABSOLUTE "${LOWBIT_ASAN_RUNTIME}" OR
   NOT EXISTS "${LOWBIT_ASAN_RUNTIME}")
  message(FATAL_ERROR "LOWBIT_SANITIZE: ${CMAKE_CXX_COMPILER} has no shared "
                      "ASan runtime (libclang-rt-22-dev)")
endif()
get_filename_component(lowbit_asan_runtime_dir ${LOWBIT_ASAN_RUNTIME}
                       DIRECTORY)
add_link_options(-shared-libsan -Wl,-rpath,${lowbit_asan_runtime_dir})
# The environment of a test that runs python3 on the instrumented module:
# the runtime first, this file's default options (which python3 lacks), and
# no leak check (the interpreter's own allocations are not lowbit's).
set(LOWBIT_SANITIZER_PYTHON_ENV
  "LD_PRELOAD=${LOWBIT_ASAN_RUNTIME}"
  "ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")

# The sanitizers' default options (fuzz/SanitizerDefaults.cpp says which and
# why) go into every executable. Compiled here, at configure time, so that
# the object can sit on every link line (CMAKE_CXX_STANDARD_LIBRARIES reaches
# executables and shared libraries once each, static libraries never).
set(LOWBIT_SANITIZER_DEFAULTS ${PROJECT_BINARY_DIR}/SanitizerDefaults.o)
execute_process(
  COMMAND ${CMAKE_CXX_COMPILER} -O1 -fPIC -c
          ${PROJECT_SOURCE_DIR}/fuzz/SanitizerDefaults.cpp
          -o ${LOWBIT_SANITIZER_DEFAULTS}
  RESULT_VARIABLE LOWBIT_SANITIZER_DEFAULTS_RESULT)
if(NOT LOWBIT_SANITIZER_DEFAULTS_RESULT EQUAL 0)
  message(FATAL_ERROR "cannot compile fuzz/SanitizerDefaults.cpp")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/fuzz/SanitizerDefaults.cpp)
set(CMAKE_CXX_STANDARD_LIBRARIES
    "${CMAKE_CXX_STANDARD_LIBRARIES} ${LOWBIT_SANITIZER_DEFAULTS}")

# Seconds each fuzz target runs under `ctest -L fuzz`.
set(LOWBIT_FUZZ_SECONDS 15 CACHE STRING
    "Seconds each fuzz target runs in the ctest label 'fuzz'")
