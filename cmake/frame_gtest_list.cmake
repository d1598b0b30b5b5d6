# Runs at ctest time (included from the CTestTestfile; see FrameGtest.cmake): lists the
# GoogleTest cases of FRAME_TEST_BINARY and adds one CTest entry per group of cases, each run in
# one process by tests/scripts/gtest_group.py (docs/standards/build-and-test.md, "Test entries"):
# - op database cases `OpDb.<family>/<op>/<case>@<backend>` -> `OpDb.<family>@<backend>`;
# - cases of a suite whose name ends in `Slow` (over about 10 s each) -> `<target>.slow`, with
#   the `slow` label (the cost budget of docs/standards/build-and-test.md);
# - with FRAME_TEST_GROUP_BY = suite, every other suite -> `<target>.<suite>`;
# - every other case -> `<target>`.
# A binary that cannot list its tests becomes one failing `<target>.startup` entry. A binary a
# partial build did not make (e.g. the sanitizer stage builds a few suites) has no entries.
if(NOT EXISTS "${FRAME_TEST_BINARY}")
  return()
endif()
execute_process(COMMAND "${FRAME_TEST_BINARY}" --gtest_list_tests
                WORKING_DIRECTORY "${FRAME_TEST_WORKDIR}"
                OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 120)
if(NOT _rc EQUAL 0)
  add_test("${FRAME_TEST_TARGET}.startup" "${FRAME_TEST_BINARY}" --gtest_list_tests)
  set_tests_properties("${FRAME_TEST_TARGET}.startup" PROPERTIES
                       ENVIRONMENT "${FRAME_TEST_ENV}" WORKING_DIRECTORY "${FRAME_TEST_WORKDIR}"
                       LABELS "${FRAME_TEST_LABELS}")
  return()
endif()
# Drop gtest's "  # GetParam() = ..." comments (they may hold list or bracket characters).
string(REGEX REPLACE "  #[^\n]*" "" _out "${_out}")
string(REPLACE ";" "" _out "${_out}")
string(REPLACE "\n" ";" _lines "${_out}")
set(_suite "")
set(_groups "")      # group entry names, in first-seen order
set(_grouped "")     # their filter patterns, excluded from the rest entry
set(_rest_cases 0)
set(_last_group "")
foreach(_line IN LISTS _lines)
  if(_line STREQUAL "")
    continue()
  endif()
  if(_line MATCHES "^ +([^ ]+)")
    set(_name "${_suite}${CMAKE_MATCH_1}")
    if(_name MATCHES "(^|[./])DISABLED_")  # gtest's rule: a suite or case name starting so
      continue()
    endif()
    set(_group "")
    if(_suite MATCHES "Slow\\.$")
      set(_group "${FRAME_TEST_TARGET}.slow")
      set(_pattern "*Slow.*")
    elseif(_name MATCHES "^OpDb\\.([^/]+)/[^@]*@([A-Za-z0-9_]+)$")
      set(_group "OpDb.${CMAKE_MATCH_1}@${CMAKE_MATCH_2}")
      set(_pattern "OpDb.${CMAKE_MATCH_1}/*@${CMAKE_MATCH_2}")
    elseif(FRAME_TEST_GROUP_BY STREQUAL "suite")
      string(REGEX REPLACE "\\.$" "" _s "${_suite}")
      set(_group "${FRAME_TEST_TARGET}.${_s}")
      set(_pattern "${_s}.*")
    endif()
    if(_group STREQUAL "")
      math(EXPR _rest_cases "${_rest_cases} + 1")
    elseif(NOT _group STREQUAL _last_group)  # cases of a group are listed together
      set(_last_group "${_group}")
      list(FIND _groups "${_group}" _at)
      if(_at EQUAL -1)
        list(APPEND _groups "${_group}")
        list(APPEND _grouped "${_pattern}")
      endif()
    endif()
  elseif(_line MATCHES "^([^ ]+)")
    set(_suite "${CMAKE_MATCH_1}")
  endif()
endforeach()

# One entry: the runner with the group's filter; pass/fail from its exit status, 77 = every case
# skipped ("not run"), never a regular expression over the log.
macro(_frame_add_group entry filter labels)
  add_test("${entry}" "${FRAME_TEST_PYTHON}" "${FRAME_TEST_RUNNER}" run
           --binary "${FRAME_TEST_BINARY}" --filter "${filter}" --entry "${entry}"
           --results "${FRAME_TEST_RESULTS}")
  set_tests_properties("${entry}" PROPERTIES
                       ENVIRONMENT "${FRAME_TEST_ENV}" WORKING_DIRECTORY "${FRAME_TEST_WORKDIR}"
                       LABELS "${labels}" SKIP_RETURN_CODE 77)
  # intel_gpu entries compile their OpenCL kernels on a cold PoCL cache (20-80 s on 2 cores):
  # a higher COST starts them first, so a fresh build's `ctest -j` does not end on one of them.
  if("${entry}" MATCHES "intel_gpu")
    set_tests_properties("${entry}" PROPERTIES COST 100)
  endif()
endmacro()

set(_opdb_entries "")
list(LENGTH _groups _n)
foreach(_i RANGE ${_n})
  if(_i EQUAL _n)
    break()
  endif()
  list(GET _groups ${_i} _group)
  list(GET _grouped ${_i} _pattern)
  set(_labels "${FRAME_TEST_LABELS}")
  if(_group MATCHES "^OpDb\\.")
    list(APPEND _labels op_db)
    list(APPEND _opdb_entries "${_group}")
  elseif(_group MATCHES "\\.slow$")
    list(APPEND _labels slow)
  endif()
  _frame_add_group("${_group}" "${_pattern}" "${_labels}")
endforeach()
if(_rest_cases GREATER 0)
  list(JOIN _grouped ":" _negative)
  if(_negative STREQUAL "")
    set(_filter "*")
  else()
    set(_filter "*-${_negative}")
  endif()
  _frame_add_group("${FRAME_TEST_TARGET}" "${_filter}" "${FRAME_TEST_LABELS}")
endif()
# The op x backend support matrix of the op database, from the entries' results.
if(_opdb_entries)
  add_test(op_db_support_matrix "${FRAME_TEST_PYTHON}" "${FRAME_TEST_RUNNER}" summary
           --results "${FRAME_TEST_RESULTS}" --entry-prefix OpDb.
           --matrix "${FRAME_TEST_MATRIX}")
  set_tests_properties(op_db_support_matrix PROPERTIES DEPENDS "${_opdb_entries}"
                       LABELS "${FRAME_TEST_LABELS};op_db")
endif()
