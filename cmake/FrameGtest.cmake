# frame_discover_gtests(TARGET ENV LABEL [GROUP_BY suite]): registers the GoogleTest cases of
# TARGET with CTest in groups, each group one entry run in one process by
# tests/scripts/gtest_group.py (the op database: one entry per family and backend; other
# binaries: one entry, or one per suite with GROUP_BY suite), listing them when ctest runs,
# never at build time. A binary that cannot start (e.g. a static registration fault, ARCH-040,
# aborts it before main) becomes one failing entry `<TARGET>.startup` that shows its message,
# and the other binaries' entries still run. (CMake's gtest_discover_tests either runs binaries
# at build time, failing the build, or stops the whole ctest run in PRE_TEST mode, and adds one
# process per case.) docs/standards/build-and-test.md, "Test entries".
# The environment of every test entry (docs/standards/build-and-test.md, "Test entries"):
# - FRAME_OPENCL_CACHE_DIR: one on-disk OpenCL program cache per build, so PoCL compiles each
#   intel_gpu kernel once per build, not once per process (the disk-cache tests set their own
#   empty directories);
# - POCL_WORK_GROUP_SPECIALIZATION=0: PoCL, the OpenCL device CI runs intel_gpu on, compiles
#   each kernel once, to its work-group function for any local size, instead of once more for
#   each local size a launch uses (a third of the intel_gpu entries' time on a cold cache;
#   kernels and results are the same, a real GPU's driver is unaffected).
set(FRAME_TEST_COMMON_ENV "FRAME_OPENCL_CACHE_DIR=${CMAKE_BINARY_DIR}/opencl_kernel_cache"
                          "POCL_WORK_GROUP_SPECIALIZATION=0")

# frame_apply_test_env(): gives every test of the current directory FRAME_TEST_COMMON_ENV,
# except the variables a test sets itself. Each test directory defers a call to it
# (cmake_language(DEFER CALL frame_apply_test_env)), so it also runs after an early return().
function(frame_apply_test_env)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} ENVIRONMENT env)
    foreach(kv IN LISTS FRAME_TEST_COMMON_ENV)
      string(REGEX MATCH "^[^=]+" key "${kv}")
      if(NOT "${env}" MATCHES "(^|;)${key}=")
        set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "${kv}")
      endif()
    endforeach()
  endforeach()
endfunction()

set(FRAME_GTEST_LIST_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/frame_gtest_list.cmake)
set(FRAME_GTEST_RUNNER ${CMAKE_CURRENT_LIST_DIR}/../tests/scripts/gtest_group.py)

function(frame_discover_gtests target env label)
  cmake_parse_arguments(ARG "" "GROUP_BY" "" ${ARGN})
  list(APPEND env ${FRAME_TEST_COMMON_ENV})
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT
"set(FRAME_TEST_BINARY \"$<TARGET_FILE:${target}>\")
set(FRAME_TEST_TARGET \"${target}\")
set(FRAME_TEST_ENV \"${env}\")
set(FRAME_TEST_LABELS \"${label}\")
set(FRAME_TEST_WORKDIR \"${CMAKE_CURRENT_BINARY_DIR}\")
set(FRAME_TEST_GROUP_BY \"${ARG_GROUP_BY}\")
set(FRAME_TEST_PYTHON \"/usr/bin/python3\")
set(FRAME_TEST_RUNNER \"${FRAME_GTEST_RUNNER}\")
set(FRAME_TEST_RESULTS \"${CMAKE_BINARY_DIR}/test_results\")
set(FRAME_TEST_MATRIX \"${CMAKE_BINARY_DIR}/op_db_support_matrix.md\")
include(\"${FRAME_GTEST_LIST_SCRIPT}\")
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
