# frame_write_if_changed(PATH CONTENT): writes CONTENT to PATH only when the file is missing or
# differs, so an unchanged generated file keeps its timestamp and rebuilds nothing. Included by
# the -P scripts that generate files (extract_doc_example.cmake, git_revision.cmake).
function(frame_write_if_changed path content)
  set(_old "")
  if(EXISTS "${path}")
    file(READ "${path}" _old)
  endif()
  if(NOT _old STREQUAL content)
    file(WRITE "${path}" "${content}")
  endif()
endfunction()
