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
add_link_options(${LOWBIT_SANITIZER_FLAGS})

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
