# lowbit_doc_example(LANG OUTPUT): writes the first ```LANG block of
# docs/embedding.md to OUTPUT, so that the tests build and run the page's
# examples exactly as they appear there. Reconfigures when the page changes.
function(lowbit_doc_example lang output)
  set(page ${PROJECT_SOURCE_DIR}/docs/embedding.md)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${page})
  file(READ ${page} text)
  string(FIND "${text}" "\n```${lang}\n" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "docs/embedding.md has no ```${lang} block")
  endif()
  string(LENGTH "\n```${lang}\n" fence)
  math(EXPR start "${start} + ${fence}")
  string(SUBSTRING "${text}" ${start} -1 rest)
  string(FIND "${rest}" "\n```" end)
  math(EXPR end "${end} + 1")
  string(SUBSTRING "${rest}" 0 ${end} code)
  file(GENERATE OUTPUT ${output} CONTENT "${code}")
endfunction()
