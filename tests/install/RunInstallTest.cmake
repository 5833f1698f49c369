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
