# LOWBIT_STATIC_COMPILER: the compiler library (liblowbit-compiler.so)
# linked against MLIR's and LLVM's static archives instead of libMLIR.so
# and libLLVM.so (docs/pipeline.md, "The compiler library, linked
# statically"). It takes ~20 ms off every process's first compile (an
# empty-cache `lowbit compile`, bench/cold_start_bench.py and
# bench/RESULTS.md): dlopen no longer binds the two libraries' ~50k
# symbol relocations, and the first compile faults in about half as many
# pages, from code --gc-sections packed together instead of pages spread
# over 130 MB of text. Warm compiles are unchanged.
#
# Default ON where it works: it needs lld (lld resolves a reference from
# any input against the archives, wherever they stand on CMake's link
# line, and takes a symbol from them before the libMLIR.so that comes
# later), and not under the sanitizers (the archives are uninstrumented
# g++ objects; tools/run-sanitizers).
include_guard(GLOBAL)

set(lowbit_static_compiler_default ON)
if(NOT LOWBIT_LLD OR LOWBIT_SANITIZE)
  set(lowbit_static_compiler_default OFF)
endif()
option(LOWBIT_STATIC_COMPILER
  "Link liblowbit-compiler.so against MLIR/LLVM's static archives (lld)"
  ${lowbit_static_compiler_default})
if(LOWBIT_STATIC_COMPILER AND NOT LOWBIT_LLD)
  message(FATAL_ERROR "LOWBIT_STATIC_COMPILER needs ld.lld (not found); "
                      "configure with -DLOWBIT_STATIC_COMPILER=OFF")
endif()

# Links `target` (a shared library) against every MLIR and LLVM archive of
# the installed MLIR. lld takes from them only the members the target
# reaches, and --gc-sections then drops the functions and data it never
# calls (Debian builds the archives with -ffunction-sections
# -fdata-sections). Only lowbit's C entry points (`lowbit_*`: the loader's
# three, the emulator runtime the JIT'd code calls) are exported, so
# MLIR's and LLVM's calls stay inside the library, bound at link time. The
# lowbit libraries the target links still name libMLIR.so and libLLVM.so
# (their usage requirements: headers, definitions); every symbol is
# resolved from the archives first, and --as-needed then records no
# DT_NEEDED for them (tests/lit/cli/static-compiler.test checks).
function(lowbit_link_mlir_statically target)
  file(GLOB archives "${LLVM_LIBRARY_DIR}/libMLIR*.a"
                     "${LLVM_LIBRARY_DIR}/libLLVM*.a")
  if(NOT archives)
    message(FATAL_ERROR "LOWBIT_STATIC_COMPILER: no libMLIR*.a or libLLVM*.a "
      "in ${LLVM_LIBRARY_DIR} (Debian: libmlir-22-dev, llvm-22-dev); "
      "configure with -DLOWBIT_STATIC_COMPILER=OFF")
  endif()
  # LLVMSupport's compression calls; Debian ships libzstd.so.1 without the
  # -dev package's libzstd.so link.
  find_library(LOWBIT_ZSTD_LIBRARY NAMES zstd libzstd.so.1 REQUIRED)
  find_package(ZLIB REQUIRED)
  target_link_libraries(${target} PRIVATE ${archives} ZLIB::ZLIB
                        ${LOWBIT_ZSTD_LIBRARY} ${CMAKE_DL_LIBS})
  set(exports "${CMAKE_CURRENT_BINARY_DIR}/${target}.exports")
  # CONFIGURE rewrites the file only when its text changes, so a
  # reconfigure does not relink the library.
  file(CONFIGURE OUTPUT "${exports}"
       CONTENT "{\n  global: lowbit_*;\n  local: *;\n};\n")
  target_link_options(${target} PRIVATE LINKER:--as-needed
    LINKER:--gc-sections LINKER:--version-script=${exports}
    # The archives carry some of Debian's debug info (~10 MB); a Release
    # build has none of its own to keep.
    $<$<CONFIG:Release,MinSizeRel>:LINKER:--strip-debug>)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${exports}")
endfunction()
