# Runs at ctest time (included from the CTestTestfile; see FrameGtest.cmake): adds one CTest
# test per GoogleTest case of FRAME_TEST_BINARY, or one failing `<target>.startup` test when
# the binary cannot list its tests.
# A binary a partial build did not make (e.g. the sanitizer stage builds a few suites) has no
# tests, as with CMake's own discovery.
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
foreach(_line IN LISTS _lines)
  if(_line STREQUAL "")
    continue()
  endif()
  if(_line MATCHES "^ +([^ ]+)")
    set(_name "${_suite}${CMAKE_MATCH_1}")
    if(NOT _name MATCHES "DISABLED_")
      add_test("${_name}" "${FRAME_TEST_BINARY}" "--gtest_filter=${_name}")
      # A GTEST_SKIP shows as "not run" in ctest's summary, as with CMake's own discovery.
      set_tests_properties("${_name}" PROPERTIES
                           ENVIRONMENT "${FRAME_TEST_ENV}" WORKING_DIRECTORY "${FRAME_TEST_WORKDIR}"
                           LABELS "${FRAME_TEST_LABELS}"
                           SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
    endif()
  elseif(_line MATCHES "^([^ ]+)")
    set(_suite "${CMAKE_MATCH_1}")
  endif()
endforeach()
