#pragma once
/// \file
/// Op-database cases (tests/ops/gen_op_db.py's manifest.json and .npy files) as OpCalls: the
/// op database harness (tests/cpp/ops/op_db_test.cpp) runs them, and the cuda compile tests
/// (tests/cpp/cuda/) generate a kernel source for each.

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "frame/core/npy.h"

namespace frame::test {

/// The database's directory: $FRAME_OP_DB_DIR, else the compiled-in FRAME_OP_DB_DIR, else
/// "op_db".
inline std::string op_db_dir() {
  if (const char* env = std::getenv("FRAME_OP_DB_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
#ifdef FRAME_OP_DB_DIR
  return FRAME_OP_DB_DIR;
#else
  return "op_db";
#endif
}

/// The manifest, or an error naming the file (missing or not JSON).
inline Result<nlohmann::json> load_op_db_manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  if (!in) {
    return not_found(
        "cannot open {}/manifest.json; build the frame_op_db target or set "
        "FRAME_OP_DB_DIR",
        dir);
  }
  try {
    nlohmann::json manifest;
    in >> manifest;
    return manifest;
  } catch (const std::exception& e) {
    return invalid_argument("{}/manifest.json is not valid JSON: {}", dir, e.what());
  }
}

/// One .npy array of a case (`dtype` "bf16" reads uint16 data as bfloat16).
inline Result<Tensor> load_op_db_array(const std::string& dir, const nlohmann::json& file,
                                       const nlohmann::json& dtype) {
  std::optional<DTypeCode> as;
  if (dtype.is_string() && dtype.get<std::string>() == "bf16") as = DTypeCode::kBFloat16;
  return read_npy(dir + "/" + file.get<std::string>(), as);
}

/// One attribute of a case.
inline Result<ir::AttrValue> load_op_db_attr(const std::string& dir, const std::string& name,
                                             const nlohmann::json& a) {
  const std::string type = a.at("type").get<std::string>();
  const nlohmann::json& v = a.at("value");
  if (type == "int") return ir::AttrValue(v.get<int64_t>());
  if (type == "float") return ir::AttrValue(v.get<double>());
  if (type == "string") return ir::AttrValue(v.get<std::string>());
  if (type == "ints") return ir::AttrValue(v.get<std::vector<int64_t>>());
  if (type == "floats") return ir::AttrValue(v.get<std::vector<double>>());
  if (type == "strings") return ir::AttrValue(v.get<std::vector<std::string>>());
  if (type == "tensor") {
    FRAME_ASSIGN_OR_RETURN(Tensor t, load_op_db_array(dir, v, a.value("dtype", nlohmann::json())));
    return ir::AttrValue(std::move(t));
  }
  return invalid_argument("attribute '{}' has unknown manifest type '{}'", name, type);
}

/// Case `c` as a call: op, node name (the case id), inputs (absent ones undefined),
/// attributes, constant inputs and output count. Errors name the input or attribute.
inline Result<OpCall> load_op_db_call(const std::string& dir, const nlohmann::json& c) {
  OpCall call;
  call.op = c.at("op").get<std::string>();
  call.node_name = c.at("id").get<std::string>();
  const nlohmann::json& in_files = c.at("inputs");
  const nlohmann::json& in_dtypes = c.at("input_dtypes");
  for (size_t i = 0; i < in_files.size(); ++i) {
    if (in_files[i].is_null()) {
      call.inputs.emplace_back();
      continue;
    }
    Result<Tensor> t = load_op_db_array(dir, in_files[i], in_dtypes[i]);
    if (!t.is_ok()) return t.status().with_prefix(fmt::format("input {}: ", i));
    call.inputs.push_back(std::move(t).value());
  }
  for (const auto& [name, a] : c.at("attrs").items()) {
    FRAME_ASSIGN_OR_RETURN(ir::AttrValue v, load_op_db_attr(dir, name, a));
    call.attrs.emplace(name, std::move(v));
  }
  call.constant_inputs = c.at("constant_inputs").get<std::vector<size_t>>();
  call.num_outputs = c.at("outputs").size();
  return call;
}

}  // namespace frame::test
