# cmake -DSOURCE_DIR=... -DWORK_DIR=... -P tests/scripts/test_gtest_list.cmake
# Checks cmake/frame_gtest_list.cmake: a binary's cases become grouped entries (op database
# cases one per family and backend, the rest one entry, or one per suite with GROUP_BY suite;
# parameterized names kept, comments and DISABLED_ cases dropped), each with the filter that
# selects exactly its cases; a binary that aborts at start-up yields one `<target>.startup`
# entry instead of stopping ctest.
cmake_policy(SET CMP0007 NEW)
set(_added "")
function(add_test name)
  set(_args "${ARGN}")
  list(FIND _args "--filter" _i)
  set(_filter "")
  if(_i GREATER -1)
    math(EXPR _i "${_i} + 1")
    list(GET _args ${_i} _filter)
  endif()
  set(_added "${_added}|${name}=${_filter}" PARENT_SCOPE)
endfunction()
function(set_tests_properties)
endfunction()

file(MAKE_DIRECTORY "${WORK_DIR}")
set(_lister "${WORK_DIR}/lister.sh")
file(WRITE "${_lister}" "#!/bin/sh
printf 'Suite.\\n  Case\\n  DISABLED_Off\\nInst/Param.\\n  Run/0  # GetParam() = [1; 2]\\n  Run/1  # GetParam() = 3\\nOpDb.\\n  nn/conv/a_f32@cpu\\n  nn/conv/a_f32@onednn\\n  elementwise/add/b_f32@cpu\\n  nn/relu/c_f32@cpu\\n'
")
set(_failer "${WORK_DIR}/failer.sh")
file(WRITE "${_failer}" "#!/bin/sh\necho 'duplicate op relu' >&2\nexit 134\n")
execute_process(COMMAND chmod +x "${_lister}" "${_failer}")

set(FRAME_TEST_TARGET demo)
set(FRAME_TEST_ENV "A=1")
set(FRAME_TEST_WORKDIR "${WORK_DIR}")
set(FRAME_TEST_BINARY "${_lister}")
set(FRAME_TEST_GROUP_BY "")
include("${SOURCE_DIR}/cmake/frame_gtest_list.cmake")
set(_want "|OpDb.nn@cpu=OpDb.nn/*@cpu|OpDb.nn@onednn=OpDb.nn/*@onednn")
string(APPEND _want "|OpDb.elementwise@cpu=OpDb.elementwise/*@cpu")
string(APPEND _want "|demo=*-OpDb.nn/*@cpu:OpDb.nn/*@onednn:OpDb.elementwise/*@cpu")
string(APPEND _want "|op_db_support_matrix=")
if(NOT _added STREQUAL _want)
  message(FATAL_ERROR "listing grouped as\n  '${_added}', expected\n  '${_want}'")
endif()

set(_added "")
set(FRAME_TEST_GROUP_BY suite)
include("${SOURCE_DIR}/cmake/frame_gtest_list.cmake")
set(_want "|demo.Suite=Suite.*|demo.Inst/Param=Inst/Param.*|OpDb.nn@cpu=OpDb.nn/*@cpu")
string(APPEND _want "|OpDb.nn@onednn=OpDb.nn/*@onednn|OpDb.elementwise@cpu=OpDb.elementwise/*@cpu")
string(APPEND _want "|op_db_support_matrix=")
if(NOT _added STREQUAL _want)
  message(FATAL_ERROR "GROUP_BY suite grouped as\n  '${_added}', expected\n  '${_want}'")
endif()

set(_added "")
set(FRAME_TEST_BINARY "${_failer}")
include("${SOURCE_DIR}/cmake/frame_gtest_list.cmake")
if(NOT _added STREQUAL "|demo.startup=")
  message(FATAL_ERROR "failing binary gave '${_added}', expected one demo.startup test")
endif()
message(STATUS "frame_gtest_list: grouping, filters and start-up failure handled")
