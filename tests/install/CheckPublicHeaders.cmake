# ctest driver: no public header includes lowering/, dialect/ or
# runtime/compiler/ (the MLIR-bound rooms) or an MLIR/LLVM header
# (docs/architecture.md, "Rooms").
# The public headers are every header the install copies
# (cmake/LowbitInstall.cmake writes their list to HEADER_LIST) and every
# header under the public include directory runtime/include/.
# Arguments: -DSOURCE_DIR= (the project's root) -DHEADER_LIST=
file(STRINGS "${HEADER_LIST}" listed)
file(GLOB_RECURSE public RELATIVE "${SOURCE_DIR}"
  "${SOURCE_DIR}/runtime/include/*.h")
list(APPEND listed ${public})
list(REMOVE_DUPLICATES listed)
list(LENGTH listed count)
if(count LESS 10)
  message(FATAL_ERROR "only ${count} public headers in ${HEADER_LIST}")
endif()

set(violations "")
foreach(header IN LISTS listed)
  file(STRINGS "${SOURCE_DIR}/${header}" includes
    REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*)[>\"].*$"
      "\\1" included "${line}")
    if(included MATCHES "^(lowering|dialect|runtime/compiler|mlir|llvm|llvm-c)/")
      string(APPEND violations "  ${header}: #include ${included}\n")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "public headers include MLIR-bound headers:\n"
    "${violations}")
endif()
message(STATUS "${count} public headers include nothing from lowering/, "
  "dialect/, runtime/compiler/, MLIR or LLVM")
