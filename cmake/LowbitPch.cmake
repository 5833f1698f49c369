# Precompiled MLIR headers for the MLIR-heavy targets (docs/testing.md,
# "Precompiled headers"). LOWBIT_PCH:
#   AUTO (default): on for g++, unless ccache is the compiler launcher and
#        caches. A GCC .gch differs from one build directory to the next, so
#        every file that uses it would miss the shared cache (or, without
#        ccache's pch_defines,time_macros sloppiness, not be cached at all).
#        A clean build without ccache (CI: no ccache, or CCACHE_DISABLE set
#        when configuring) gets the headers.
#   ON, OFF: forced.
set(LOWBIT_PCH AUTO CACHE STRING
  "Precompiled MLIR headers: AUTO (on unless ccache caches), ON or OFF")
set_property(CACHE LOWBIT_PCH PROPERTY STRINGS AUTO ON OFF)

set(LOWBIT_USE_PCH OFF)
set(lowbit_pch_why "LOWBIT_PCH=${LOWBIT_PCH}")
if(LOWBIT_PCH STREQUAL "AUTO")
  set(LOWBIT_USE_PCH ON)
  if(LOWBIT_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # The sanitizer build (clang, tools/run-sanitizers): on. It shares no
    # ccache entries with any other build, so the cache argument below does
    # not apply, and parsing the MLIR headers is a large part of its hours.
    # clang refuses a precompiled header built with other flags (an error,
    # never a silent fallback), so a drifted group fails the build.
    set(lowbit_pch_why "AUTO: the clang sanitizer build")
  elseif(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR LOWBIT_SANITIZE)
    # Measured and tested with g++ only.
    set(LOWBIT_USE_PCH OFF)
    set(lowbit_pch_why "AUTO: not the default g++ build")
  elseif(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
    # Ask ccache itself: it reads its configuration files and CCACHE_*
    # from the environment of this configure run.
    list(GET CMAKE_CXX_COMPILER_LAUNCHER 0 lowbit_ccache)
    execute_process(COMMAND ${lowbit_ccache} -k disable
      OUTPUT_VARIABLE lowbit_ccache_disabled
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE lowbit_rc)
    if(lowbit_rc EQUAL 0 AND lowbit_ccache_disabled STREQUAL "true")
      set(lowbit_pch_why "AUTO: ccache is the launcher but disabled")
    else()
      set(LOWBIT_USE_PCH OFF)
      set(lowbit_pch_why "AUTO: ccache is the launcher")
    endif()
  else()
    set(lowbit_pch_why "AUTO: no ccache launcher")
  endif()
elseif(LOWBIT_PCH MATCHES "^(ON|on|On|1|YES|yes|TRUE|true)$")
  set(LOWBIT_USE_PCH ON)
elseif(NOT LOWBIT_PCH MATCHES "^(OFF|off|Off|0|NO|no|FALSE|false)$")
  message(FATAL_ERROR "LOWBIT_PCH must be AUTO, ON or OFF, not '${LOWBIT_PCH}'")
endif()
message(STATUS "Precompiled MLIR headers: ${LOWBIT_USE_PCH} (${lowbit_pch_why})")

# The groups: each header is compiled once, with the flags of its first
# target, and reused by the others (REUSE_FROM), which must be compiled with
# the same flags and definitions. CMake adds -Winvalid-pch to every user, so
# under LOWBIT_WERROR (tools/bootstrap.sh) a .gch that GCC cannot use (a
# target whose flags drifted from its group's) fails the build instead of
# being silently ignored. Targets not listed compile as before.
set(lowbit_pch_dir ${PROJECT_SOURCE_DIR}/cmake/pch)
# The lowering's object library: 27 files, a third of a clean build.
set(LOWBIT_PCH_LOWERING ${lowbit_pch_dir}/LoweringMlir.h obj.LowbitLowering)
# Not the runtime's MLIR libraries (LowbitCompiler, LowbitJit) nor the CLI's
# compiler library: with the IR core precompiled, g++ 12 reports its false
# -Wstringop-overflow in libstdc++'s inlined std::string::replace in four of
# their files (an error under LOWBIT_WERROR), and they gain little.
# The MLIR-using Catch2 tests (exceptions on, LLVM's definitions; the
# targets that add -fexceptions explicitly compile the same, as exceptions
# are GCC's default).
set(LOWBIT_PCH_TESTS ${lowbit_pch_dir}/TestMlir.h
  LowbitGpuTestSupport lowbit-gpu-tests lowbit-tail-warmup-tests
  LowbitBackendCheck lowbit-compiler-tests
  LowbitFusionCheck lowbit-fusion-tests
  LowbitKvKernelTestSupport LowbitKvEmulatorRun lowbit-kvkernel-tests
  lowbit-jit-tests lowbit-jit-fused-tests LowbitJitKvSupport
  lowbit-jit-kv-tests
  lowbit-emulator-tests lowbit-kvattention-tests lowbit-kiviattention-tests)

# Called once at the end of the top-level CMakeLists.txt, when every target
# exists.
function(lowbit_apply_precompiled_headers)
  if(NOT LOWBIT_USE_PCH)
    return()
  endif()
  foreach(group LOWERING TESTS)
    set(members ${LOWBIT_PCH_${group}})
    list(POP_FRONT members header owner)
    target_precompile_headers(${owner} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
    foreach(target IN LISTS members)
      target_precompile_headers(${target} REUSE_FROM ${owner})
    endforeach()
  endforeach()
endfunction()
