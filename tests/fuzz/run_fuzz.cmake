# Runs one libFuzzer binary for a fixed time (the fuzz_<target>_smoke tests of
# tests/fuzz/CMakeLists.txt): a fresh corpus dir WORK/corpus first, then the seed CORPORA;
# crash inputs go to WORK/artifacts/. Fails when the fuzzer finds anything.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
set(_dirs)
foreach(d ${CORPORA})
  if(EXISTS ${d})
    list(APPEND _dirs ${d})
  endif()
endforeach()
execute_process(COMMAND ${FUZZER} ${ARGS} -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus
                        ${_dirs}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzzer ${FUZZER} failed (exit ${rc}); crash inputs in ${WORK}/artifacts/")
endif()
