# frame_discover_gtests(TARGET ENV LABEL): registers every GoogleTest case of TARGET with CTest,
# listing them when ctest runs, never at build time. A binary that cannot start (e.g. a static
# registration fault, ARCH-040, aborts it before main) becomes one failing test
# `<TARGET>.startup` that shows its message, and the other binaries' tests still run.
# (CMake's gtest_discover_tests either runs binaries at build time, failing the build, or
# stops the whole ctest run in PRE_TEST mode.)
set(FRAME_GTEST_LIST_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/frame_gtest_list.cmake)

function(frame_discover_gtests target env label)
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT
"set(FRAME_TEST_BINARY \"$<TARGET_FILE:${target}>\")
set(FRAME_TEST_TARGET \"${target}\")
set(FRAME_TEST_ENV \"${env}\")
set(FRAME_TEST_LABELS \"${label}\")
set(FRAME_TEST_WORKDIR \"${CMAKE_CURRENT_BINARY_DIR}\")
include(\"${FRAME_GTEST_LIST_SCRIPT}\")
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
