# `cmake --install`: the public headers, the libraries and the CMake
# package lowbitConfig.cmake (docs/embedding.md). Two components:
#   core  the MLIR-free runtime: format model and reference quantizer,
#         kernel spec, .npy/JSON I/O, kernel cache, dlopen'd CUDA driver.
#         Needs no MLIR, LLVM or CUDA to consume.
#   c     the C API (lowbit.h) as lib/liblowbit.so and the compiler
#         library it loads with dlopen at the first miss,
#         lib/liblowbit-compiler.so, next to it (where
#         runtime/jit/CompilerLoader.cpp looks). MLIR-free to consume: a
#         process whose kernels come from the disk cache never loads
#         libMLIR or libLLVM. Also the static MLIR-free lowbit::Jit
#         (LowbitJitLoader).
#   jit   lowbit::Jit (Jit.h) with the compiler linked in; needs MLIR 22.
#   cli   the lowbit executable (MLIR-free) in bin/ and the compiler
#         library it loads with dlopen, lib/liblowbit-compiler.so (the
#         front end looks in ../lib next to itself).
# The package's imported targets are written by hand (lowbitConfig.cmake.in)
# rather than exported: the build's targets use source-tree include paths.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# LowbitKv: the KV-cache reference, MLIR-free; LowbitAot's ranked launch
# sizes (KV bundle entries) use its kv/KvLaunchSizes.
set(LOWBIT_CORE_LIBRARIES LowbitFormat LowbitSpec LowbitRuntimeCore
  LowbitRuntimeCache LowbitRuntimeDriver LowbitKv LowbitAot)
set(LOWBIT_C_LIBRARIES LowbitC LowbitJitLoader LowbitJitKey LowbitTarget)
set(LOWBIT_JIT_LIBRARIES LowbitJit LowbitCompiler LowbitLowering
  LowbitDialect)

# Public headers, at the paths the sources include them by.
set(LOWBIT_CORE_HEADERS
  runtime/include/lowbit/Expected.h
  runtime/include/lowbit/lowbit.h
  runtime/include/dlpack/dlpack.h
  format/Codec.h format/Format.h format/Prologue.h format/Quantize.h
  format/Scheme.h format/SchemeText.h
  runtime/spec/KernelSpec.h
  runtime/core/AtomicFile.h runtime/core/Json.h runtime/core/Npy.h
  runtime/cache/Hash.h runtime/cache/KernelCache.h runtime/cache/KernelKey.h
  runtime/driver/CudaDriver.h
  runtime/driver/DynamicLibrary.h runtime/driver/NvJitLink.h
  runtime/driver/Nvrtc.h)
set(LOWBIT_JIT_HEADERS
  runtime/include/lowbit/Jit.h
  target/Target.h)
# Every public header, as a source path, for tests/install's check that
# none includes lowering/, dialect/ or MLIR.
string(REPLACE ";" "\n" lowbit_public_header_lines
  "${LOWBIT_CORE_HEADERS};runtime/driver/CudaDriverTiming.h;${LOWBIT_JIT_HEADERS}")
file(WRITE ${PROJECT_BINARY_DIR}/cmake/PublicHeaders.txt
  "${lowbit_public_header_lines}\n")

function(lowbit_install_headers component)
  foreach(header ${ARGN})
    string(REGEX REPLACE "^runtime/include/" "" installed "${header}")
    get_filename_component(directory "${installed}" DIRECTORY)
    install(FILES ${PROJECT_SOURCE_DIR}/${header}
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${directory}
      COMPONENT ${component})
  endforeach()
endfunction()
lowbit_install_headers(core ${LOWBIT_CORE_HEADERS})
# Included by CudaDriver.h in its middle, not on its own.
lowbit_install_headers(core runtime/driver/CudaDriverTiming.h)
# lowbit::Jit is MLIR-free to include: its headers come with the C API.
lowbit_install_headers(c ${LOWBIT_JIT_HEADERS})
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/dlpack/LICENSE
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dlpack COMPONENT core)

install(TARGETS ${LOWBIT_CORE_LIBRARIES}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT core)
install(TARGETS ${LOWBIT_C_LIBRARIES}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT c)
install(TARGETS ${LOWBIT_JIT_LIBRARIES}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT jit)
# lib/, not CMAKE_INSTALL_LIBDIR, for both: the compiler library must sit
# next to liblowbit.so (and in ../lib next to the executable).
install(TARGETS LowbitCShared LIBRARY DESTINATION lib COMPONENT c)
install(TARGETS lowbit-compiler LIBRARY DESTINATION lib COMPONENT c)

install(TARGETS lowbit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT cli)
# lib/, not CMAKE_INSTALL_LIBDIR: runtime/jit/CompilerLoader.cpp looks in
# ../lib next to the executable, as in the build tree.
install(TARGETS lowbit-compiler LIBRARY DESTINATION lib COMPONENT cli)

set(LOWBIT_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lowbit)
# The headers a consumer may include, for the self-containment check of
# tests/install.
string(REGEX REPLACE "runtime/include/" "" LOWBIT_INSTALLED_HEADERS
  "${LOWBIT_CORE_HEADERS};${LOWBIT_JIT_HEADERS}")
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/lowbitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/lowbitConfig.cmake
  INSTALL_DESTINATION ${LOWBIT_PACKAGE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/lowbitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/lowbitConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/lowbitConfigVersion.cmake
  DESTINATION ${LOWBIT_PACKAGE_DIR} COMPONENT core)
