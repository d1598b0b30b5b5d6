// The cuda backend (docs/backends/cuda.md) on a machine with or without a GPU. Without a
// device: the probe's reason reaches `frame backends`, kernel refusals and the fallback chain
// (every node then runs on cpu with the cpu-only result), and every kernel source the backend
// generates for the op database's cases, the list ops' dtypes and geometries, and the fused
// bodies of real models compiles with NVRTC for sm_80 and sm_90 (NVRTC needs no driver). With
// a device (scripts/test_cuda.sh on a GPU machine), the tests marked so run the kernels in
// device groups against the cpu backend.

#include <gtest/gtest.h>

#ifndef FRAME_HAVE_CUDA
TEST(Cuda, NotInThisBuild) { GTEST_SKIP() << "the cuda backend is not in this build"; }
#else

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/blas.h"
#include "backends/cuda/codegen.h"
#include "backends/cuda/dnn.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/nvrtc.h"
#include "backends/gpu/ew_formulas.h"
#include "common/op_db_case.h"
#include "common/op_runner.h"
#include "common/tolerance.h"
#include "frame/ir/graph.h"
#include "frame/onnx/onnx.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

namespace frame::backends::cuda {
namespace {

// Architectures every generated source must compile for (issue: Ampere and Hopper).
constexpr int kArchs[] = {80, 90};

// ---- sources ----

// Distinct sources with where each was first generated from (for failure messages).
using SourceSet = std::map<std::string, std::string>;

void add_source(SourceSet& set, std::string source, std::string origin) {
  set.emplace(std::move(source), std::move(origin));
}

// Every list op's formula over each dtype it declares, contiguous; each kernel template
// (broadcast, 64-bit indices, bool output) over each dtype with one op.
void add_list_sources(SourceSet& set) {
  const Geometry contiguous1{1, 0, false}, contiguous2{2, 0, false};
  for (const gpu::EwOp& op : gpu::ew_ops()) {
    if (op.formula == nullptr) continue;
    for (int d = 0; d < kNumDTypes; ++d) {
      const auto dtype = static_cast<DTypeCode>(d);
      if (!(op.dtypes & kCudaFloatTypes).contains(dtype)) continue;
      Result<std::string> s =
          op.arity == gpu::kVariadic
              ? variadic_source(op.op, dtype, Geometry{3, 0, false})
              : list_op_source(op.op, dtype, op.arity == 1 ? contiguous1 : contiguous2);
      if (s.is_ok()) add_source(set, *s, fmt::format("{} {}", op.op, dtype_name(dtype)));
    }
  }
  for (int d = 0; d < kNumDTypes; ++d) {
    const auto dtype = static_cast<DTypeCode>(d);
    if (!kCudaFloatTypes.contains(dtype)) continue;
    for (const Geometry& g : {Geometry{2, 4, false}, Geometry{2, 0, true}, Geometry{2, 8, true}}) {
      for (const char* op : {"add", "less"}) {
        Result<std::string> s = list_op_source(op, dtype, g);
        ASSERT_TRUE(s.is_ok()) << op << " " << dtype_name(dtype) << ": " << s.status().to_string();
        add_source(set, *s,
                   fmt::format("{} {} rank {} wide {}", op, dtype_name(dtype), g.rank, g.wide));
      }
    }
  }
}

// The kernel each op-database case of an op with a cuda kernel gets (declined cases, e.g.
// integer dtypes, generate nothing).
void add_op_db_sources(SourceSet& set, size_t& cases) {
  const std::string dir = test::op_db_dir();
  Result<nlohmann::json> manifest = test::load_op_db_manifest(dir);
  ASSERT_TRUE(manifest.is_ok()) << manifest.status().to_string();
  for (const nlohmann::json& c : manifest->at("cases")) {
    const std::string op = c.at("op").get<std::string>();
    const ops::KernelDef* k = ops::KernelRegistry::global().find(op, kBackendName);
    if (k == nullptr) continue;
    Result<test::OpCall> call = test::load_op_db_call(dir, c);
    ASSERT_TRUE(call.is_ok()) << call.status().to_string();
    Result<test::detail::CheckedCall> checked = test::detail::check_call(*call);
    if (!checked.is_ok() || !k->dtypes.contains(checked->ctx.input_types[0].dtype)) continue;
    Result<NodeKernel> kernel = node_kernel(checked->ctx);
    if (!kernel.is_ok()) continue;
    ++cases;
    add_source(set, kernel->source, "op-db " + c.at("id").get<std::string>());
  }
}

// The elementwise nodes and fused bodies of `graph` as a GPU backend's lowering leaves them
// (placed on intel_gpu, whose fusion accepts the same formula table), generated for cuda.
Status add_model_sources(SourceSet& set, const ir::Graph& graph, const std::string& name,
                         size_t& nodes) {
  runtime::CompileOptions o;
  o.backends = {"intel_gpu", "cpu"};
  FRAME_ASSIGN_OR_RETURN(runtime::Executable exe, runtime::compile(graph, o));
  const ir::Graph& g = exe.compiled_graph();
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    if (ops::KernelRegistry::global().find(n.op, kBackendName) == nullptr) continue;
    const ops::NodeContext ctx = ops::make_node_context(g, n, ops::OpRegistry::global().find(n.op));
    Result<NodeKernel> kernel = node_kernel(ctx);
    if (!kernel.is_ok()) continue;
    ++nodes;
    add_source(set, kernel->source, fmt::format("{} node '{}' ({})", name, n.name, n.op));
  }
  return Status();
}

// `source` as one part of a batched NVRTC program (EveryGeneratedSourceCompilesForSm80AndSm90):
// inside namespace frame_batch_<k>, its kernel frame_kernel renamed frame_kernel_<k> (an
// extern "C" name is global), and every macro it defines undefined after it.
std::string batched_source(const std::string& source, size_t k) {
  std::string body = source;
  const std::string kernel = "frame_kernel(", renamed = fmt::format("frame_kernel_{}(", k);
  for (size_t at = body.find(kernel); at != std::string::npos;
       at = body.find(kernel, at + renamed.size())) {
    body.replace(at, kernel.size(), renamed);
  }
  std::string undefs;
  for (size_t at = body.find("#define "); at != std::string::npos;
       at = body.find("#define ", at + 1)) {
    const size_t name0 = at + 8;
    size_t name1 = name0;
    while (name1 < body.size() &&
           (std::isalnum(static_cast<unsigned char>(body[name1])) != 0 || body[name1] == '_')) {
      ++name1;
    }
    undefs += "#undef " + body.substr(name0, name1 - name0) + "\n";
  }
  return fmt::format("namespace frame_batch_{} {{\n{}\n}}\n{}", k, body, undefs);
}

// ---- tests ----

TEST(CudaCodegen, EveryGeneratedSourceCompilesForSm80AndSm90) {
  if (!nvrtc_unavailable_reason().empty()) GTEST_SKIP() << nvrtc_unavailable_reason();
  SourceSet set;
  add_list_sources(set);
  size_t list_sources = set.size();
  size_t cases = 0;
  add_op_db_sources(set, cases);
  size_t model_nodes = 0;
  if (runtime::find_backend("intel_gpu") != nullptr &&
      runtime::find_backend("intel_gpu")->unavailable_reason().empty()) {
    Result<ir::Graph> cnn = onnx::load(std::string(FRAME_SOURCE_DIR) + "/models/small_cnn.onnx");
    ASSERT_TRUE(cnn.is_ok()) << cnn.status().to_string();
    ASSERT_TRUE(add_model_sources(set, *cnn, "small_cnn", model_nodes).is_ok());
    onnx::LoadOptions lo;
    lo.input_shapes["ids"] = {2, 13};
    Result<ir::Graph> bert = onnx::load(std::string(FRAME_SESSION_MODELS_DIR) + "/bert.onnx", lo);
    ASSERT_TRUE(bert.is_ok()) << bert.status().to_string();
    Status st = add_model_sources(set, *bert, "bert", model_nodes);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_GT(model_nodes, 0u) << "no elementwise node or fused body left in the models";
  } else {
    std::printf("intel_gpu unavailable: model fused bodies not enumerated\n");
  }
  EXPECT_GT(cases, 50u) << "op-database cases with a cuda kernel";

  // Each distinct source for each architecture, on two threads (NVRTC is thread-safe), in
  // batches of kBatch sources per NVRTC program: most of a compile is NVRTC's fixed start-up
  // (1172 programs took 45 s on 2 threads here, 50 programs of 24 sources 18 s), so one
  // program holds several sources, each
  // in a namespace of its own, its kernel renamed and its macros undefined after it. A batch
  // that fails compiles its sources one by one, so a failure names its source as before.
  constexpr size_t kBatch = 24;
  std::vector<std::pair<const std::string*, const std::string*> > work;
  for (const auto& [source, origin] : set) work.emplace_back(&source, &origin);
  const size_t batches = (work.size() + kBatch - 1) / kBatch;
  std::atomic<size_t> next{0}, split{0};
  std::mutex mu;
  std::vector<std::string> failures;
  const auto compile_one = [&](size_t k, int arch) {
    const auto& [source, origin] = work[k];
    Result<std::shared_ptr<const Compiled> > c = compile_cuda(*source, arch);
    if (!c.is_ok() || (*c)->cubin.size() < 64) {
      std::lock_guard lock(mu);
      failures.push_back(fmt::format("{} for sm_{}: {}\n{}", *origin, arch,
                                     c.is_ok() ? "empty cubin" : c.status().to_string(), *source));
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t i = next++; i < batches * std::size(kArchs); i = next++) {
      const size_t b0 = (i / std::size(kArchs)) * kBatch, b1 = std::min(work.size(), b0 + kBatch);
      const int arch = kArchs[i % std::size(kArchs)];
      std::string program;
      for (size_t k = b0; k < b1; ++k) program += batched_source(*work[k].first, k);
      Result<std::shared_ptr<const Compiled> > c = compile_cuda(program, arch);
      if (c.is_ok() && (*c)->cubin.size() >= 64) continue;
      ++split;
      for (size_t k = b0; k < b1; ++k) compile_one(k, arch);
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%zu distinct sources (%zu list-op forms, %zu op-database cases, %zu model nodes) "
      "compiled for sm_80 and sm_90 in %.1f s (NVRTC %s), %zu of %zu batches one by one\n",
      set.size(), list_sources, cases, model_nodes, secs, nvrtc_version().c_str(), split.load(),
      batches * std::size(kArchs));
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed; first:\n" << failures.front();
}

// The on-disk cubin cache across two processes (ctest cuda_disk_cache_write / _read): the
// first compiles a source and writes one file, the second loads the same cubin from disk
// without compiling; a damaged file is compiled again (cuda_disk_cache_damaged).
TEST(CudaCache, DiskCacheWritesThenLoads) {
  const char* phase = std::getenv("FRAME_TEST_CUDA_DISK_CACHE");
  const char* dir = std::getenv(kCacheDirEnv);
  if (phase == nullptr || dir == nullptr) GTEST_SKIP() << "run by the ctests cuda_disk_cache_*";
  if (!nvrtc_unavailable_reason().empty()) GTEST_SKIP() << nvrtc_unavailable_reason();
  Result<std::string> src = list_op_source("softsign", DTypeCode::kFloat32, Geometry{1, 0, false});
  ASSERT_TRUE(src.is_ok());
  Result<std::shared_ptr<const Compiled> > c = compile_cuda(*src, 90);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_GT((*c)->cubin.size(), 64u);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".cubin") files.push_back(e.path());
  }
  ASSERT_EQ(files.size(), 1u);
  const std::string p = phase;
  if (p == "write" || p == "damaged_check") {
    EXPECT_FALSE((*c)->from_disk);
    EXPECT_EQ(sources_compiled(), 1u);
  } else if (p == "read") {
    EXPECT_TRUE((*c)->from_disk);
    EXPECT_EQ(sources_compiled(), 0u);
  } else if (p == "damage") {
    // Truncates the file the write phase left: the next process must compile again.
    std::filesystem::resize_file(files[0], std::filesystem::file_size(files[0]) / 2);
  }
}

// The meta parameter's bytes follow the generated struct: int rank, then dims, then per input
// its strides, each I wide (int or long long after 4 bytes of padding).
TEST(CudaCodegen, MetaParameterLayoutAndBroadcastStrides) {
  const Shape out{2, 3, 4};
  const std::vector<Shape> ins{{2, 3, 4}, {3, 1}, {4}};
  const std::vector<std::vector<int64_t> > st = broadcast_strides(out, ins);
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0], (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(st[1], (std::vector<int64_t>{0, 1, 0}));  // [3,1] under [2,3,4]
  EXPECT_EQ(st[2], (std::vector<int64_t>{0, 0, 1}));
  const Geometry g = geometry_of(out, ins);
  EXPECT_EQ(g.rank, 3u);
  EXPECT_EQ(g.num_inputs, 3u);
  EXPECT_FALSE(g.wide);
  EXPECT_EQ(geometry_of(out, {out, out}).rank, 0u);

  for (bool wide : {false, true}) {
    const std::vector<unsigned char> m = pack_meta(out, st, 3, wide);
    const size_t isz = wide ? 8 : 4, at = wide ? 8 : 4;
    ASSERT_EQ(m.size(), at + isz * kMaxRank * 4);
    int32_t rank = 0;
    std::memcpy(&rank, m.data(), 4);
    EXPECT_EQ(rank, 3);
    auto get = [&](size_t slot) {
      int64_t v = 0;
      std::memcpy(&v, m.data() + at + slot * isz, isz);  // little-endian
      if (!wide) v = static_cast<int32_t>(v);
      return v;
    };
    EXPECT_EQ(get(0), 2);
    EXPECT_EQ(get(1), 3);
    EXPECT_EQ(get(2), 4);
    EXPECT_EQ(get(kMaxRank + 2), 1);      // input 0, dim 2
    EXPECT_EQ(get(2 * kMaxRank + 1), 1);  // input 1, dim 1
    EXPECT_EQ(get(2 * kMaxRank + 0), 0);  // input 1 broadcasts dim 0
    EXPECT_EQ(get(3 * kMaxRank + 2), 1);  // input 2, dim 2
  }
}

// Sources a generator must refuse rather than emit wrong code for.
TEST(CudaCodegen, RefusesWhatItCannotGenerate) {
  EXPECT_FALSE(list_op_source("add", DTypeCode::kInt32, Geometry{2, 0, false}).is_ok());
  EXPECT_FALSE(list_op_source("no_such_op", DTypeCode::kFloat32, Geometry{1, 0, false}).is_ok());
  EXPECT_FALSE(list_op_source("add", DTypeCode::kFloat32, Geometry{1, 0, false}).is_ok());
  EXPECT_FALSE(variadic_source("sum", DTypeCode::kFloat16, Geometry{3, 0, false}).is_ok());
  EXPECT_FALSE(list_op_source("add", DTypeCode::kFloat32, Geometry{2, 9, false}).is_ok());
  EXPECT_FALSE(
      variadic_source("sum", DTypeCode::kFloat32, Geometry{kMaxInputs + 1, 0, false}).is_ok());
}

// The cuBLASLt mapping of matmul and gemm nodes (blas.h), decided from shapes alone.
Result<GemmShape> shape_of(const char* op, std::vector<Shape> in, ir::AttrMap attrs = {}) {
  test::OpCall call;
  call.op = op;
  for (Shape& s : in) call.inputs.push_back(*Tensor::zeros(DTypeCode::kFloat32, std::move(s)));
  call.attrs = std::move(attrs);
  FRAME_ASSIGN_OR_RETURN(test::detail::CheckedCall c, test::detail::check_call(call));
  return gemm_shape(c.ctx);
}

TEST(CudaBlas, MatmulAndGemmMapOntoCublasLt) {
  // B one matrix: A's batch folds into M.
  Result<GemmShape> s = shape_of("matmul", {{2, 3, 4, 5}, {5, 6}});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->m, 24);
  EXPECT_EQ(s->n, 6);
  EXPECT_EQ(s->k, 5);
  EXPECT_EQ(s->batch, 1);
  // A one matrix, B batched: A's batch stride 0.
  s = shape_of("matmul", {{4, 5}, {2, 5, 6}});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->batch, 2);
  EXPECT_EQ(s->m, 4);
  EXPECT_EQ(s->stride_a, 0);
  EXPECT_EQ(s->stride_b, 30);
  // Equal batches: strided.
  s = shape_of("matmul", {{2, 4, 5}, {2, 5, 6}});
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->batch, 2);
  EXPECT_EQ(s->stride_a, 20);
  EXPECT_EQ(s->stride_b, 30);
  // 1-D A: one row.
  s = shape_of("matmul", {{5}, {5, 6}});
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->m, 1);
  EXPECT_EQ(s->n, 6);
  // Batch dims that broadcast partially are declined (they fall back).
  s = shape_of("matmul", {{2, 1, 4, 5}, {1, 3, 5, 6}});
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  // gemm: transA, a bias vector (cuBLASLt's bias epilogue), a full C with beta.
  s = shape_of("gemm", {{4, 3}, {4, 6}, {6}}, {{"transA", int64_t{1}}});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_TRUE(s->trans_a);
  EXPECT_EQ(s->m, 3);
  EXPECT_EQ(s->k, 4);
  EXPECT_EQ(s->n, 6);
  EXPECT_EQ(s->c_kind, 1);
  EXPECT_EQ(s->beta, 0.0);  // the bias is added by the epilogue, not through beta * C
  s = shape_of("gemm", {{3, 4}, {6, 4}, {3, 6}}, {{"transB", int64_t{1}}, {"beta", 0.5}});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_TRUE(s->trans_b);
  EXPECT_EQ(s->c_kind, 2);
  EXPECT_EQ(s->beta, 0.5);
  EXPECT_FALSE(shape_of("gemm", {{3, 4}, {4, 6}, {3, 1}}).is_ok());
  EXPECT_FALSE(shape_of("gemm", {{3, 4}, {4, 6}, {6}}, {{"beta", 0.5}}).is_ok());
}

// The libraries open and have every entry point the backend resolves (a misspelt or versioned
// symbol would be "lacks <name>"); where the toolkit has no cuBLASLt or cuDNN, their nodes
// fall back with that reason.
TEST(CudaLibraries, OpenWithEveryEntryPoint) {
  for (const std::string* reason :
       {&nvrtc_unavailable_reason(), &cublaslt_unavailable_reason(), &cudnn_unavailable_reason()}) {
    EXPECT_EQ(reason->find("lacks"), std::string::npos) << *reason;
    if (!reason->empty()) std::printf("not available here: %s\n", reason->c_str());
  }
}

// What cuDNN is asked to do, decided from shapes and attributes alone (dnn.h).
Status dnn_of(const char* op, std::vector<Shape> in, ir::AttrMap attrs = {}, size_t outputs = 1) {
  test::OpCall call;
  call.op = op;
  for (Shape& s : in) call.inputs.push_back(*Tensor::zeros(DTypeCode::kFloat32, std::move(s)));
  call.attrs = std::move(attrs);
  call.num_outputs = outputs;
  FRAME_ASSIGN_OR_RETURN(test::detail::CheckedCall c, test::detail::check_call(call));
  return dnn_supports(c.ctx);
}

TEST(CudaDnn, ConvPoolingAndBatchNormMapOntoCudnn) {
  EXPECT_TRUE(dnn_of("conv", {{1, 4, 9, 9}, {8, 4, 3, 3}, {8}},
                     {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
                  .is_ok());
  EXPECT_TRUE(dnn_of("conv", {{1, 4, 9, 9}, {4, 1, 3, 3}},
                     {{"group", int64_t{4}}, {"strides", std::vector<int64_t>{2, 2}}})
                  .is_ok());
  EXPECT_TRUE(dnn_of("conv", {{1, 2, 5, 5, 5}, {3, 2, 3, 3, 3}}).is_ok());  // 3-D
  // Pads that differ at the two ends (SAME_UPPER with an even kernel) are declined.
  Status asym =
      dnn_of("conv", {{1, 4, 8, 8}, {8, 4, 2, 2}}, {{"auto_pad", std::string("SAME_UPPER")}});
  EXPECT_EQ(asym.code(), StatusCode::kUnimplemented) << asym.to_string();
  EXPECT_FALSE(dnn_of("conv", {{1, 4, 9}, {8, 4, 3}}).is_ok());  // 1-D: rank 3
  EXPECT_TRUE(
      dnn_of("max_pool", {{1, 4, 9, 9}}, {{"kernel_shape", std::vector<int64_t>{3, 3}}}).is_ok());
  EXPECT_FALSE(dnn_of("max_pool", {{1, 4, 9, 9}},
                      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"ceil_mode", int64_t{1}}})
                   .is_ok());
  EXPECT_FALSE(dnn_of("max_pool", {{1, 4, 9, 9}}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}, 2)
                   .is_ok());  // Indices
  EXPECT_TRUE(
      dnn_of("average_pool", {{1, 4, 9, 9}},
             {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"count_include_pad", int64_t{1}}})
          .is_ok());
  EXPECT_TRUE(dnn_of("conv_transpose", {{1, 4, 5, 5}, {4, 2, 3, 3}},
                     {{"strides", std::vector<int64_t>{2, 2}},
                      {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                      {"output_padding", std::vector<int64_t>{1, 1}}})
                  .is_ok());
  EXPECT_TRUE(dnn_of("batch_normalization", {{2, 3, 4, 4}, {3}, {3}, {3}, {3}}).is_ok());
  EXPECT_TRUE(
      dnn_of("batch_normalization", {{2, 3}, {3}, {3}, {3}, {3}}).is_ok());  // padded to 4-D
}

// Whether cuda could run `ctx` as far as its host code can tell without a device: the
// generated kernels' sources, cuBLASLt's and cuDNN's mappings.
Status host_side_support(const ops::NodeContext& ctx) {
  if (ctx.op == "matmul" || ctx.op == "gemm") return gemm_shape(ctx).status();
  if (ctx.op == "conv" || ctx.op == "max_pool" || ctx.op == "average_pool" ||
      ctx.op == "batch_normalization") {
    return dnn_supports(ctx);
  }
  return node_kernel(ctx).status();
}

// Every node of the bundled CNN and of the session tests' BERT-style encoder (as imported, and
// after the cpu-free lowering a GPU placement gives) has a cuda kernel that takes it, so on a
// GPU they run with nothing left to cpu.
TEST(CudaCoverage, RealModelsHaveACudaKernelForEveryNode) {
  onnx::LoadOptions bert_opts;
  bert_opts.input_shapes["ids"] = {2, 13};
  const std::vector<std::pair<std::string, onnx::LoadOptions> > models{
      {std::string(FRAME_SOURCE_DIR) + "/models/small_cnn.onnx", {}},
      {std::string(FRAME_SESSION_MODELS_DIR) + "/bert.onnx", bert_opts}};
  for (const auto& [path, opts] : models) {
    Result<ir::Graph> g = onnx::load(path, opts);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    std::vector<std::string> missing;
    for (ir::NodeId id : g->node_ids()) {
      const ir::Node& n = g->node(id);
      if (ops::KernelRegistry::global().find(n.op, kBackendName) == nullptr) {
        missing.push_back(n.name + " (" + n.op + "): no kernel");
        continue;
      }
      const ops::NodeContext ctx =
          ops::make_node_context(*g, n, ops::OpRegistry::global().find(n.op));
      if (Status st = host_side_support(ctx); !st.is_ok()) {
        missing.push_back(n.name + " (" + n.op + "): " + st.message());
      }
    }
    EXPECT_TRUE(missing.empty()) << path << ": " << ::testing::PrintToString(missing);
  }
}

// Without a usable device: `frame backends`' reason, every cuda kernel declines with it, and
// a model placed on cuda,cpu runs wholly on cpu with the cpu-only result.
TEST(CudaBackend, WithoutADeviceEveryNodeFallsBackWithTheReason) {
  if (selected_device() != nullptr) GTEST_SKIP() << "a CUDA device is present";
  const std::string& why = unavailable_reason();
  ASSERT_FALSE(why.empty());
  const runtime::Backend* b = runtime::find_backend("cuda");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->unavailable_reason(), why);
  Result<ir::Graph> g = onnx::load(std::string(FRAME_SOURCE_DIR) + "/models/small_cnn.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  runtime::CompileOptions o;
  o.backends = {"cuda", "cpu"};
  Result<runtime::Executable> exe = runtime::compile(*g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  size_t declined = 0;
  for (const runtime::Placement& p : exe->report().placements) {
    EXPECT_EQ(p.backend, "cpu") << p.node;
    for (const std::string& r : p.rejected) {
      if (r.find(why) != std::string::npos) ++declined;
    }
  }
  EXPECT_GT(declined, 0u) << "no placement names the probe's reason";
  runtime::CompileOptions cpu_only;
  cpu_only.backends = {"cpu"};
  Result<runtime::Executable> ref = runtime::compile(*g, cpu_only);
  ASSERT_TRUE(ref.is_ok());
  Result<Tensor> x = read_npy(std::string(FRAME_SOURCE_DIR) + "/models/small_cnn.input.npy");
  ASSERT_TRUE(x.is_ok());
  const std::string in = exe->input_signature()[0].first;
  Result<runtime::TensorMap> got = exe->run({{in, *x}});
  Result<runtime::TensorMap> want = ref->run({{in, *x}});
  ASSERT_TRUE(got.is_ok() && want.is_ok());
  for (const auto& [name, t] : *want) {
    ASSERT_EQ(got->at(name).nbytes(), t.nbytes());
    EXPECT_EQ(std::memcmp(got->at(name).raw_data(), t.raw_data(), t.nbytes()), 0) << name;
  }
}

// On a GPU: z = sigmoid(tanh(x * y) + x) with y [3, 1] broadcast over x [4, 3, 33] (the
// broadcast path) and t = tanh(x * y) also an output, fused or not, in one device group, and
// a same-shape chain of 4099 elements (the four-per-thread path and its tail), against values
// computed here in double.
TEST(CudaDevice, ElementwiseGraphsMatchDoublePrecision) {
  if (selected_device() == nullptr) GTEST_SKIP() << unavailable_reason();
  const Shape xs{4, 3, 33};
  std::vector<float> xv(static_cast<size_t>(numel_of(xs))), yv{0.5F, -1.25F, 2.0F};
  for (size_t i = 0; i < xv.size(); ++i)
    xv[i] = static_cast<float>((static_cast<int>(i % 97) - 48) * 0.0625);
  ir::Graph g("chain");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, xs});
  const ir::ValueId y = g.add_input("y", ir::TensorType{DTypeCode::kFloat32, {3, 1}});
  auto node = [&](const char* op, std::vector<ir::ValueId> in, const char* name) {
    Result<ir::NodeId> n = g.create_node(op, name, std::move(in), 1, {}, {name});
    EXPECT_TRUE(n.is_ok()) << n.status().to_string();
    return g.node(*n).outputs[0];
  };
  const ir::ValueId t = node("tanh", {node("mul", {x, y}, "m")}, "t");
  const ir::ValueId z = node("sigmoid", {node("add", {t, x}, "a")}, "z");
  g.add_output(z);
  g.add_output(t);
  for (bool fuse : {true, false}) {
    runtime::CompileOptions o;
    o.backends = {"cuda", "cpu"};
    o.strict = true;
    if (!fuse) o.disabled_passes = {"operator-fusion"};
    Result<runtime::Executable> exe = runtime::compile(g, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    Result<runtime::TensorMap> out = exe->run(
        {{"x", Tensor::from_vector<float>(xs, xv)}, {"y", Tensor::from_vector<float>({3, 1}, yv)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    for (size_t i = 0; i < xv.size(); ++i) {
      const double tv = std::tanh(static_cast<double>(xv[i]) * yv[(i / 33) % 3]);
      const double zv = 1.0 / (1.0 + std::exp(-(tv + xv[i])));
      EXPECT_NEAR(out->at("t").data<float>()[i], tv, 2e-6) << i << (fuse ? " fused" : "");
      EXPECT_NEAR(out->at("z").data<float>()[i], zv, 2e-6) << i << (fuse ? " fused" : "");
    }
  }
}

// On a GPU: matmul (batched, broadcast) and gemm (transposed, bias, beta * C) on cuBLASLt
// against products computed here in double.
TEST(CudaDevice, MatmulAndGemmMatchDoublePrecision) {
  if (selected_device() == nullptr) GTEST_SKIP() << unavailable_reason();
  auto values = [](size_t n, int seed) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(((i * 7 + static_cast<size_t>(seed) * 13) % 17) - 8) / 8.0F;
    return v;
  };
  const int64_t b = 3, m = 5, k = 7, n = 4;
  const std::vector<float> av = values(static_cast<size_t>(b * m * k), 1);
  const std::vector<float> bv = values(static_cast<size_t>(k * n), 2);
  const std::vector<float> cv = values(static_cast<size_t>(n), 3);
  ir::Graph g("mm");
  const ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {b, m, k}});
  const ir::ValueId w = g.add_input("w", ir::TensorType{DTypeCode::kFloat32, {k, n}});
  const ir::ValueId c = g.add_input("c", ir::TensorType{DTypeCode::kFloat32, {n}});
  const ir::ValueId y = g.node(*g.create_node("matmul", "mm", {a, w}, 1, {}, {"y"})).outputs[0];
  g.add_output(y);
  // gemm of A's first matrix with the same weights, alpha 0.5 and a bias vector.
  const ir::ValueId a2 = g.add_input("a2", ir::TensorType{DTypeCode::kFloat32, {m, k}});
  const ir::ValueId z =
      g.node(*g.create_node("gemm", "gm", {a2, w, c}, 1, {{"alpha", 0.5}}, {"z"})).outputs[0];
  g.add_output(z);
  runtime::CompileOptions o;
  o.backends = {"cuda", "cpu"};
  o.strict = true;
  Result<runtime::Executable> exe = runtime::compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const std::vector<float> a2v(av.begin(), av.begin() + m * k);
  Result<runtime::TensorMap> out = exe->run({{"a", Tensor::from_vector<float>({b, m, k}, av)},
                                             {"w", Tensor::from_vector<float>({k, n}, bv)},
                                             {"c", Tensor::from_vector<float>({n}, cv)},
                                             {"a2", Tensor::from_vector<float>({m, k}, a2v)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (int64_t r = 0; r < b * m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t q = 0; q < k; ++q)
        want += static_cast<double>(av[static_cast<size_t>(r * k + q)]) *
                bv[static_cast<size_t>(q * n + j)];
      EXPECT_NEAR(out->at("y").data<float>()[r * n + j], want, 1e-5) << r << "," << j;
      if (r < m) {
        EXPECT_NEAR(out->at("z").data<float>()[r * n + j], 0.5 * want + cv[static_cast<size_t>(j)],
                    1e-5);
      }
    }
  }
}

// On a GPU: an f32 matmul with K = 512 is within the cross-backend class by default (full
// f32) and within the tf32 class with FRAME_CUDA_TF32=1 (BUILD-011), against double.
TEST(CudaDevice, Tf32IsOptInAndWithinItsClass) {
  if (selected_device() == nullptr) GTEST_SKIP() << unavailable_reason();
  const int64_t m = 64, k = 512, n = 64;
  std::vector<float> av(static_cast<size_t>(m * k)), bv(static_cast<size_t>(k * n));
  for (size_t i = 0; i < av.size(); ++i)
    av[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  for (size_t i = 0; i < bv.size(); ++i)
    bv[i] = static_cast<float>(std::cos(0.23 * static_cast<double>(i)));
  std::vector<double> want(static_cast<size_t>(m * n), 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < n; ++j)
        want[static_cast<size_t>(r * n + j)] +=
            static_cast<double>(av[static_cast<size_t>(r * k + q)]) *
            bv[static_cast<size_t>(q * n + j)];
  ir::Graph g("mm");
  const ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {m, k}});
  const ir::ValueId b = g.add_input("b", ir::TensorType{DTypeCode::kFloat32, {k, n}});
  g.add_output(g.node(*g.create_node("matmul", "mm", {a, b}, 1, {}, {"y"})).outputs[0]);
  for (bool tf32 : {false, true}) {
    if (tf32)
      setenv(kTf32Env, "1", 1);
    else
      unsetenv(kTf32Env);
    runtime::CompileOptions o;
    o.backends = {"cuda"};
    o.strict = true;
    Result<runtime::Executable> exe = runtime::compile(g, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    Result<runtime::TensorMap> out = exe->run({{"a", Tensor::from_vector<float>({m, k}, av)},
                                               {"b", Tensor::from_vector<float>({k, n}, bv)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Tolerance tol = tolerance_for(
        DTypeCode::kFloat32, tf32 ? ToleranceClass::kTf32 : ToleranceClass::kCrossBackend);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(values_close(out->at("y").data<float>()[i], want[i], tol))
          << i << (tf32 ? " tf32" : " f32") << ": " << out->at("y").data<float>()[i] << " vs "
          << want[i];
    }
  }
  unsetenv(kTf32Env);
}

// On a GPU: a gather whose indices are a graph input, in a device group; a bad index is the
// cpu kernel's error naming the first bad position, and the next run is right.
TEST(CudaDevice, GatherWithComputedIndicesReportsTheCpuError) {
  if (selected_device() == nullptr) GTEST_SKIP() << unavailable_reason();
  ir::Graph g("g");
  const ir::ValueId data =
      g.add_constant("data", Tensor::from_vector<float>({3, 2}, {10, 11, 20, 21, 30, 31}));
  const ir::ValueId ids = g.add_input("ids", ir::TensorType{DTypeCode::kInt64, {4}});
  g.add_output(g.node(*g.create_node("gather", "gather", {data, ids}, 1, {}, {"y"})).outputs[0]);
  runtime::CompileOptions o;
  o.backends = {"cuda"};
  o.strict = true;
  Result<runtime::Executable> exe = runtime::compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  Result<runtime::TensorMap> bad =
      exe->run({{"ids", Tensor::from_vector<int64_t>({4}, {1, 7, -9, 0})}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find(
                "node 'gather' (gather): input 1 (indices) value 7 at 1 out of range [-3, 2]"),
            std::string::npos)
      << bad.status().message();
  Result<runtime::TensorMap> good =
      exe->run({{"ids", Tensor::from_vector<int64_t>({4}, {2, -3, 1, 0})}});
  ASSERT_TRUE(good.is_ok()) << good.status().to_string();
  const std::vector<float> want{30, 31, 10, 11, 20, 21, 10, 11};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(good->at("y").data<float>()[i], want[i]);
}

// On a GPU: conv (bias, padding, groups) -> max_pool -> batch_norm -> average_pool on cuDNN in
// one device group, against the cpu backend (an independent implementation) under the
// cross-backend class.
TEST(CudaDevice, ConvPoolBatchNormMatchCpu) {
  if (selected_device() == nullptr) GTEST_SKIP() << unavailable_reason();
  ir::Graph g("cnn");
  auto values = [](size_t n, double scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + scale) * scale);
    return v;
  };
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {2, 4, 12, 12}});
  const ir::ValueId w =
      g.add_constant("w", Tensor::from_vector<float>({8, 2, 3, 3}, values(144, 0.5)));
  const ir::ValueId b = g.add_constant("b", Tensor::from_vector<float>({8}, values(8, 0.1)));
  auto node = [&](const char* op, std::vector<ir::ValueId> in, ir::AttrMap attrs,
                  const char* name) {
    Result<ir::NodeId> n = g.create_node(op, name, std::move(in), 1, std::move(attrs), {name});
    EXPECT_TRUE(n.is_ok()) << n.status().to_string();
    return g.node(*n).outputs[0];
  };
  const ir::ValueId c = node(
      "conv", {x, w, b}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{2}}}, "c");
  const ir::ValueId p = node(
      "max_pool", {c},
      {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}, "p");
  auto param = [&](const char* name, double base) {
    std::vector<float> v(8);
    for (size_t i = 0; i < 8; ++i) v[i] = static_cast<float>(base + 0.1 * static_cast<double>(i));
    return g.add_constant(name, Tensor::from_vector<float>({8}, v));
  };
  const ir::ValueId n =
      node("batch_normalization",
           {p, param("s", 1.0), param("bb", 0.0), param("m", -0.2), param("v", 0.5)}, {}, "n");
  g.add_output(node(
      "average_pool", {n},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
      "a"));
  runtime::CompileOptions on_gpu;
  on_gpu.backends = {"cuda"};
  on_gpu.strict = true;
  runtime::CompileOptions on_cpu;
  on_cpu.backends = {"cpu"};
  Result<runtime::Executable> gpu = runtime::compile(g, on_gpu);
  Result<runtime::Executable> cpu = runtime::compile(g, on_cpu);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  const runtime::TensorMap in{{"x", Tensor::from_vector<float>({2, 4, 12, 12}, values(1152, 1.0))}};
  Result<runtime::TensorMap> got = gpu->run(in);
  Result<runtime::TensorMap> want = cpu->run(in);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_TRUE(want.is_ok());
  const test::CompareResult r =
      test::compare_tensors(got->at("a"), want->at("a"),
                            tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
  EXPECT_TRUE(r.ok) << r.message;
}

}  // namespace
}  // namespace frame::backends::cuda

#endif  // FRAME_HAVE_CUDA
