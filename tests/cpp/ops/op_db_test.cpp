// The op database harness (STYLE.md "Tests", ggml test-backend-ops style): one gtest per
// manifest case, named "OpDb.<op>/<case>" (e.g. OpDb.add/broadcast_f32). Each case runs schema
// check, shape inference and the cpu kernel, then compares with the independent reference
// under the BUILD-011 tolerance of the output dtype (or the case's documented override).
// The manifest comes from tests/ops/gen_op_db.py (built by the frame_op_db target); the
// FRAME_OP_DB_DIR environment variable overrides the compiled-in directory.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/op_runner.h"
#include "common/tolerance.h"
#include "frame/core/npy.h"

namespace frame::test {
namespace {

using json = nlohmann::json;

std::string op_db_dir() {
  if (const char* env = std::getenv("FRAME_OP_DB_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
#ifdef FRAME_OP_DB_DIR
  return FRAME_OP_DB_DIR;
#else
  return "op_db";
#endif
}

Result<Tensor> load_array(const std::string& dir, const json& file, const json& dtype) {
  std::optional<DTypeCode> as;
  if (dtype.is_string() && dtype.get<std::string>() == "bf16") as = DTypeCode::kBFloat16;
  return read_npy(dir + "/" + file.get<std::string>(), as);
}

Result<ir::AttrValue> load_attr(const std::string& dir, const std::string& name, const json& a) {
  const std::string type = a.at("type").get<std::string>();
  const json& v = a.at("value");
  if (type == "int") return ir::AttrValue(v.get<int64_t>());
  if (type == "float") return ir::AttrValue(v.get<double>());
  if (type == "string") return ir::AttrValue(v.get<std::string>());
  if (type == "ints") return ir::AttrValue(v.get<std::vector<int64_t>>());
  if (type == "floats") return ir::AttrValue(v.get<std::vector<double>>());
  if (type == "strings") return ir::AttrValue(v.get<std::vector<std::string>>());
  if (type == "tensor") {
    FRAME_ASSIGN_OR_RETURN(Tensor t, load_array(dir, v, a.value("dtype", json())));
    return ir::AttrValue(std::move(t));
  }
  return invalid_argument("attribute '{}' has unknown manifest type '{}'", name, type);
}

class OpDbTest : public ::testing::Test {
 public:
  OpDbTest(std::shared_ptr<const json> c, std::string dir) : case_(std::move(c)), dir_(dir) {}

  void TestBody() override {
    const json& c = *case_;
    OpCall call;
    call.op = c.at("op").get<std::string>();
    call.node_name = c.at("id").get<std::string>();
    const json& in_files = c.at("inputs");
    const json& in_dtypes = c.at("input_dtypes");
    for (size_t i = 0; i < in_files.size(); ++i) {
      if (in_files[i].is_null()) {
        call.inputs.emplace_back();
        continue;
      }
      Result<Tensor> t = load_array(dir_, in_files[i], in_dtypes[i]);
      ASSERT_TRUE(t.is_ok()) << "input " << i << ": " << t.status().to_string();
      call.inputs.push_back(std::move(t).value());
    }
    for (const auto& [name, a] : c.at("attrs").items()) {
      Result<ir::AttrValue> v = load_attr(dir_, name, a);
      ASSERT_TRUE(v.is_ok()) << v.status().to_string();
      call.attrs.emplace(name, std::move(v).value());
    }
    call.constant_inputs = c.at("constant_inputs").get<std::vector<size_t>>();
    const json& out_files = c.at("outputs");
    const json& out_dtypes = c.at("output_dtypes");
    call.num_outputs = out_files.size();

    Result<std::vector<Tensor>> got = run_op(call);
    ASSERT_TRUE(got.is_ok()) << "op '" << call.op << "': " << got.status().to_string();
    ASSERT_EQ(got->size(), out_files.size());

    const std::vector<bool> check = c.at("check_values").get<std::vector<bool>>();
    for (size_t i = 0; i < out_files.size(); ++i) {
      Result<Tensor> expected = load_array(dir_, out_files[i], out_dtypes[i]);
      ASSERT_TRUE(expected.is_ok()) << "output " << i << ": " << expected.status().to_string();
      const Tensor& actual = (*got)[i];
      ASSERT_EQ(actual.dtype(), expected->dtype())
          << "output " << i << ": shape inference gives dtype " << dtype_name(actual.dtype())
          << ", reference has " << dtype_name(expected->dtype());
      ASSERT_EQ(actual.shape(), expected->shape())
          << "output " << i << ": shape inference gives " << shape_to_string(actual.shape())
          << ", reference has " << shape_to_string(expected->shape());
      if (i < check.size() && !check[i]) continue;
      Tolerance tol = tolerance_for(expected->dtype());
      if (c.contains("rtol")) tol.rtol = c.at("rtol").get<double>();
      if (c.contains("atol")) tol.atol = c.at("atol").get<double>();
      CompareResult r = compare_tensors(actual, *expected, tol);
      EXPECT_TRUE(r.ok) << "output " << i << ": " << r.message;
    }
  }

 private:
  std::shared_ptr<const json> case_;
  std::string dir_;
};

// Fails with `why` (used when the manifest itself cannot be read).
class OpDbBroken : public ::testing::Test {
 public:
  explicit OpDbBroken(std::string why) : why_(std::move(why)) {}
  void TestBody() override { FAIL() << why_; }

 private:
  std::string why_;
};

// gtest names may not contain spaces or dots; keep [A-Za-z0-9_/] and map the rest to '_'.
std::string sanitize(const std::string& id) {
  std::string s = id;
  for (char& ch : s) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '_' || ch == '/';
    if (!keep) ch = '_';
  }
  return s;
}

void register_broken(const std::string& why) {
  ::testing::RegisterTest("OpDbManifest", "load", nullptr, nullptr, __FILE__, __LINE__,
                          [why]() -> ::testing::Test* { return new OpDbBroken(why); });
}

// Registers one test per manifest case at static-init time, before gtest_main runs.
[[maybe_unused]] const bool kRegistered = [] {
  const std::string dir = op_db_dir();
  std::ifstream in(dir + "/manifest.json");
  if (!in) {
    register_broken("cannot open " + dir +
                    "/manifest.json; build the frame_op_db target or set FRAME_OP_DB_DIR");
    return false;
  }
  json manifest;
  try {
    in >> manifest;
  } catch (const std::exception& e) {
    register_broken(dir + "/manifest.json is not valid JSON: " + e.what());
    return false;
  }
  for (const json& c : manifest.at("cases")) {
    auto shared = std::make_shared<const json>(c);
    ::testing::RegisterTest("OpDb", sanitize(c.at("id").get<std::string>()).c_str(), nullptr,
                            nullptr, __FILE__, __LINE__,
                            [shared, dir]() -> OpDbTest* { return new OpDbTest(shared, dir); });
  }
  return true;
}();

}  // namespace
}  // namespace frame::test
