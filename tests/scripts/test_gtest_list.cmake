# cmake -DSOURCE_DIR=... -DWORK_DIR=... -P tests/scripts/test_gtest_list.cmake
# Checks cmake/frame_gtest_list.cmake: a binary that lists tests yields one test per case
# (parameterized names kept, comments and DISABLED_ cases dropped); a binary that aborts at
# start-up yields one `<target>.startup` test instead of stopping ctest.
set(_added "")
function(add_test name)
  set(_added "${_added}|${name}" PARENT_SCOPE)
endfunction()
function(set_tests_properties)
endfunction()

file(MAKE_DIRECTORY "${WORK_DIR}")
set(_lister "${WORK_DIR}/lister.sh")
file(WRITE "${_lister}" "#!/bin/sh\nprintf 'Suite.\\n  Case\\n  DISABLED_Off\\nInst/Param.\\n  Run/0  # GetParam() = [1; 2]\\n  Run/1  # GetParam() = 3\\n'\n")
set(_failer "${WORK_DIR}/failer.sh")
file(WRITE "${_failer}" "#!/bin/sh\necho 'duplicate op relu' >&2\nexit 134\n")
execute_process(COMMAND chmod +x "${_lister}" "${_failer}")

set(FRAME_TEST_TARGET demo)
set(FRAME_TEST_ENV "A=1")
set(FRAME_TEST_WORKDIR "${WORK_DIR}")
set(FRAME_TEST_BINARY "${_lister}")
include("${SOURCE_DIR}/cmake/frame_gtest_list.cmake")
if(NOT _added STREQUAL "|Suite.Case|Inst/Param.Run/0|Inst/Param.Run/1")
  message(FATAL_ERROR "listing parsed as '${_added}'")
endif()

set(_added "")
set(FRAME_TEST_BINARY "${_failer}")
include("${SOURCE_DIR}/cmake/frame_gtest_list.cmake")
if(NOT _added STREQUAL "|demo.startup")
  message(FATAL_ERROR "failing binary gave '${_added}', expected one demo.startup test")
endif()
message(STATUS "frame_gtest_list: listing and start-up failure handled")
