# ctest driver: install the build into a prefix inside the build tree,
# configure and build tests/install/project against it, run it, and check
# that it links no MLIR or LLVM. Arguments: -DBUILD_DIR= -DSOURCE_DIR=
# -DWORK_DIR= -DGENERATOR=
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result
    OUTPUT_VARIABLE output ERROR_VARIABLE output)
  message("${output}")
  if(result)
    message(FATAL_ERROR "failed (${result}): ${ARGN}")
  endif()
  set(output "${output}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
# Everything is installed (so that every public header is checked), but the
# project asks for the core component only.
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/project -B ${WORK_DIR}/build
    -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
if(NOT output MATCHES "consumer: mxfp4 codes 10 32, scale code 127")
  message(FATAL_ERROR "unexpected output: ${output}")
endif()
run(readelf -d ${WORK_DIR}/build/consumer)
if(output MATCHES "libMLIR|libLLVM")
  message(FATAL_ERROR "the core consumer links MLIR/LLVM:\n${output}")
endif()
# The installed C API: a miss loads the installed compiler library (next
# to liblowbit.so) and compiles; a disk hit in a fresh process loads no
# MLIR or LLVM (the dynamic loader's log).
set(capi ${CMAKE_COMMAND} -E env LOWBIT_CACHE_DIR=${WORK_DIR}/cache
  LD_DEBUG=libs ${WORK_DIR}/build/capi_consumer "quantize mxfp4")
run(readelf -d ${WORK_DIR}/build/capi_consumer ${prefix}/lib/liblowbit.so)
if(output MATCHES "libMLIR|libLLVM")
  message(FATAL_ERROR "the C API consumer links MLIR/LLVM:\n${output}")
endif()
run(${capi})
if(NOT output MATCHES "capi_consumer: args 3 ptx [1-9]" OR
   NOT output MATCHES "calling init: ${prefix}/lib/liblowbit-compiler.so")
  message(FATAL_ERROR "the C API's miss did not compile with the installed "
                      "compiler library:\n${output}")
endif()
run(${capi})
if(NOT output MATCHES "capi_consumer: args 3 ptx [1-9]" OR
   output MATCHES "calling init: [^\n]*(libMLIR|libLLVM|liblowbit-compiler)")
  message(FATAL_ERROR "the C API's disk hit loaded the compiler:\n${output}")
endif()

# The installed CLI: the front end links no MLIR or LLVM, and finds the
# installed compiler library in ../lib when a command compiles.
run(readelf -d ${prefix}/bin/lowbit)
if(output MATCHES "libMLIR|libLLVM")
  message(FATAL_ERROR "the lowbit front end links MLIR/LLVM:\n${output}")
endif()
run(${prefix}/bin/lowbit formats)
run(${CMAKE_COMMAND} -E env LOWBIT_CACHE=off
    ${prefix}/bin/lowbit compile "quantize fp8_e4m3" --target sm_90a)
if(NOT output MATCHES "\\.target sm_90a")
  message(FATAL_ERROR "the installed lowbit compiled no PTX: ${output}")
endif()
message("install test passed")
