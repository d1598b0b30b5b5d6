# Op test database (STYLE.md "Tests"): tests/ops/gen_op_db.py writes manifest.json + .npy files
# from the family modules in tests/ops/op_db/; tests/cpp/ops/op_db_test.cpp runs every case
# on the cpu kernels and on every other backend with a kernel for the op. Regenerated whenever
# a python file under tests/ops changes.
set(FRAME_OP_DB_DIR ${CMAKE_BINARY_DIR}/op_db)
set(FRAME_OP_DB_PYTHON /usr/bin/python3 CACHE FILEPATH
    "Python with numpy used to generate the op test database")
file(GLOB_RECURSE _op_db_py CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/ops/*.py)
add_custom_command(
  OUTPUT ${FRAME_OP_DB_DIR}/manifest.json
  COMMAND ${FRAME_OP_DB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/ops/gen_op_db.py
          --out ${FRAME_OP_DB_DIR}
  DEPENDS ${_op_db_py}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "Generating the op test database in ${FRAME_OP_DB_DIR}"
  VERBATIM)
add_custom_target(frame_op_db DEPENDS ${FRAME_OP_DB_DIR}/manifest.json)

if(TARGET frame_ops_tests)
  add_dependencies(frame_ops_tests frame_op_db)
  # Compiled-in default; the FRAME_OP_DB_DIR environment variable overrides it at run time.
  target_compile_definitions(frame_ops_tests PRIVATE FRAME_OP_DB_DIR="${FRAME_OP_DB_DIR}")
  # The whole op database in one process, so the op x backend support matrix is printed once
  # in the test log and written to <build>/op_db_support_matrix.md.
  add_test(NAME op_db_support_matrix COMMAND frame_ops_tests --gtest_filter=OpDb.*
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endif()

# Session test models (tests/session/gen_session_models.py, ADR 0006): a small BERT-style
# encoder exported by torch with dynamic batch and sequence axes, with torch's outputs at three
# sequence lengths; read by tests/cpp/onnx/session_test.cpp.
set(FRAME_SESSION_MODELS_DIR ${CMAKE_BINARY_DIR}/session_models)
add_custom_command(
  OUTPUT ${FRAME_SESSION_MODELS_DIR}/bert.onnx
  COMMAND ${FRAME_OP_DB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/session/gen_session_models.py
          --out ${FRAME_SESSION_MODELS_DIR}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/session/gen_session_models.py
  COMMENT "Generating the session test models in ${FRAME_SESSION_MODELS_DIR}"
  VERBATIM)
add_custom_target(frame_session_models DEPENDS ${FRAME_SESSION_MODELS_DIR}/bert.onnx)
if(TARGET frame_onnx_tests)
  add_dependencies(frame_onnx_tests frame_session_models)
  target_compile_definitions(frame_onnx_tests PRIVATE
    FRAME_SESSION_MODELS_DIR="${FRAME_SESSION_MODELS_DIR}")
endif()
