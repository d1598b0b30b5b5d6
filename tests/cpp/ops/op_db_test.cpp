// The op database harness (ggml test-backend-ops style): one gtest per manifest case and
// backend, "OpDb.<family>/<op>/<case>@<backend>" (e.g. OpDb.elementwise/add/broadcast_f32@cpu).
// On cpu it runs schema check, shape inference and the cpu kernel, then compares with the
// independent reference under the BUILD-011 tolerance of the output dtype (or the case's
// documented override); on every other backend that registers a kernel for the op (e.g.
// OpDb.nn/max_pool/2d_pad_f32@onednn) it does the same with that kernel, placed strictly on
// that backend, under the BUILD-011 cross-backend tolerance class (or the case's override
// where looser). A case the backend's kernel declines (KernelDef::supports) is skipped for
// that backend only, with the reason. ctest runs one entry per family and backend
// (`OpDb.elementwise@onednn`, cmake/frame_gtest_list.cmake); its op_db_support_matrix entry
// writes the op x backend matrix (passed / declined / failed) to
// <build>/op_db_support_matrix.md from those entries' results.
// The manifest comes from tests/ops/gen_op_db.py (built by the frame_op_db target); the
// FRAME_OP_DB_DIR environment variable overrides the compiled-in directory, and
// FRAME_OP_DB_BACKENDS (comma-separated) limits the non-cpu backends tested.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/op_db_case.h"
#include "common/op_runner.h"
#include "common/tolerance.h"
#include "frame/core/npy.h"
#include "frame/ops/device_group.h"
#include "frame/ops/kernel_registry.h"

namespace frame::test {
namespace {

using json = nlohmann::json;

class OpDbTest : public ::testing::Test {
 public:
  OpDbTest(std::shared_ptr<const json> c, std::string dir, std::string backend)
      : case_(std::move(c)), dir_(std::move(dir)), backend_(std::move(backend)) {}

  void TestBody() override {
    const json& c = *case_;
    Result<OpCall> loaded = load_op_db_call(dir_, c);
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
    OpCall& call = *loaded;
    const json& out_files = c.at("outputs");

    if (backend_ != "cpu") {
      Result<KernelSupport> sup = kernel_supports(call, backend_);
      ASSERT_TRUE(sup.is_ok()) << "op '" << call.op << "': " << sup.status().to_string();
      if (!sup->supported) GTEST_SKIP() << "declined: " << sup->reason;
    }
    Result<std::vector<Tensor>> got = run_op(call, backend_);
    ASSERT_TRUE(got.is_ok()) << "op '" << call.op << "' on " << backend_ << ": "
                             << got.status().to_string();
    ASSERT_EQ(got->size(), out_files.size());
    check_outputs(*got, "");
    // A device backend runs nodes in device groups (include/frame/ops/device_group.h): the
    // same case through that path (device memory, sub-buffers) must give the same answer.
    if (backend_ != "cpu" && ops::find_device_group_compiler(backend_) != nullptr) {
      Result<std::vector<Tensor>> grouped = run_op_in_device_group(call, backend_);
      ASSERT_TRUE(grouped.is_ok()) << "op '" << call.op << "' in a " << backend_
                                   << " device group: " << grouped.status().to_string();
      ASSERT_EQ(grouped->size(), out_files.size());
      check_outputs(*grouped, " (device group)");
    }
  }

 private:
  void check_outputs(const std::vector<Tensor>& got, const char* path) {
    const json& c = *case_;
    const json& out_files = c.at("outputs");
    const json& out_dtypes = c.at("output_dtypes");
    const std::vector<bool> check = c.at("check_values").get<std::vector<bool>>();
    for (size_t i = 0; i < out_files.size(); ++i) {
      Result<Tensor> expected = load_op_db_array(dir_, out_files[i], out_dtypes[i]);
      ASSERT_TRUE(expected.is_ok()) << "output " << i << ": " << expected.status().to_string();
      const Tensor& actual = got[i];
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
      if (backend_ != "cpu") {
        // BUILD-011 cross-backend class, or the case's own override where that is looser.
        const Tolerance x = tolerance_for(expected->dtype(), ToleranceClass::kCrossBackend);
        tol.rtol = std::max(tol.rtol, x.rtol);
        tol.atol = std::max(tol.atol, x.atol);
      }
      CompareResult r = compare_tensors(actual, *expected, tol);
      EXPECT_TRUE(r.ok) << "output " << i << " on " << backend_ << path << ": " << r.message;
    }
  }

  std::shared_ptr<const json> case_;
  std::string dir_;
  std::string backend_;
};

// Fails with `why` (used when the manifest itself cannot be read).
class OpDbBroken : public ::testing::Test {
 public:
  explicit OpDbBroken(std::string why) : why_(std::move(why)) {}
  void TestBody() override { FAIL() << why_; }

 private:
  std::string why_;
};

// Every dtype a device backend's kernel declares is exercised by some case (issue text of the
// intel_gpu backend: "for every dtype the kernel declares"): a declared dtype without a case
// would reach users untested. Internal ops (fused bodies) are covered by the backend's own
// tests (tests/cpp/intel_gpu/).
class OpDbDtypeCoverage : public ::testing::Test {
 public:
  OpDbDtypeCoverage(std::shared_ptr<const json> manifest, std::string backend)
      : manifest_(std::move(manifest)), backend_(std::move(backend)) {}
  void TestBody() override {
    std::set<std::pair<std::string, std::string>> have;  // (op, dtype at its dtype_input)
    for (const json& c : manifest_->at("cases")) {
      const std::string op = c.at("op").get<std::string>();
      const ops::KernelDef* k = ops::KernelRegistry::global().find(op, backend_);
      const json& dts = c.at("input_dtypes");
      const auto at = static_cast<size_t>(k == nullptr ? 0 : k->dtype_input);
      if (at < dts.size() && dts[at].is_string()) have.emplace(op, dts[at].get<std::string>());
    }
    std::vector<std::string> missing;
    for (const ops::KernelDef* k : ops::KernelRegistry::global().list_backend(backend_)) {
      if (k->op.ends_with("_internal")) continue;
      for (int d = 0; d < kNumDTypes; ++d) {
        const auto code = static_cast<DTypeCode>(d);
        if (!k->dtypes.contains(code)) continue;
        const std::string name(dtype_name(code));
        if (have.count({k->op, name}) == 0) missing.push_back(k->op + " " + name);
      }
    }
    EXPECT_TRUE(missing.empty()) << backend_ << " kernels declare dtypes no op-database case "
                                 << "runs (add cases in tests/ops/op_db/ or narrow the kernel's "
                                 << ".dtypes()): " << ::testing::PrintToString(missing);
  }

 private:
  std::shared_ptr<const json> manifest_;
  std::string backend_;
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

// Non-cpu backends to cross-check: those with kernels (the frame library's registrations ran
// before this binary's static init), limited by FRAME_OP_DB_BACKENDS when set.
std::vector<std::string> cross_backends() {
  std::vector<std::string> out;
  std::string only;
  if (const char* env = std::getenv("FRAME_OP_DB_BACKENDS"); env != nullptr) only = env;
  for (const std::string& b : ops::KernelRegistry::global().backends()) {
    if (b == "cpu") continue;
    if (!only.empty() && ("," + only + ",").find("," + b + ",") == std::string::npos) continue;
    out.push_back(b);
  }
  return out;
}

// Registers one test per manifest case and backend at static-init time, before gtest_main
// runs.
[[maybe_unused]] const bool kRegistered = [] {
  const std::string dir = op_db_dir();
  Result<json> loaded = load_op_db_manifest(dir);
  if (!loaded.is_ok()) {
    register_broken(loaded.status().message());
    return false;
  }
  const json manifest = std::move(loaded).value();
  const std::vector<std::string> others = cross_backends();
  auto whole = std::make_shared<const json>(manifest);
  for (const std::string& b : others) {
    if (ops::find_device_group_compiler(b) == nullptr) continue;
    ::testing::RegisterTest(
        "OpDbDtypeCoverage", b.c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [whole, b]() -> ::testing::Test* { return new OpDbDtypeCoverage(whole, b); });
  }
  for (const json& c : manifest.at("cases")) {
    auto shared = std::make_shared<const json>(c);
    // OpDb.<family>/<op>/<case>@<backend>: ctest runs one entry per family and backend
    // (cmake/frame_gtest_list.cmake), `--gtest_filter='OpDb.*/add/*@cpu'` one op.
    const std::string name =
        sanitize(c.at("family").get<std::string>() + "/" + c.at("id").get<std::string>());
    const std::string op = c.at("op").get<std::string>();
    std::vector<std::string> backends{"cpu"};
    for (const std::string& b : others) {
      if (ops::KernelRegistry::global().find(op, b) != nullptr) backends.push_back(b);
    }
    for (const std::string& b : backends) {
      const std::string test = name + "@" + b;
      ::testing::RegisterTest(
          "OpDb", test.c_str(), nullptr, nullptr, __FILE__, __LINE__,
          [shared, dir, b]() -> OpDbTest* { return new OpDbTest(shared, dir, b); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace frame::test
