// Every op with a decomposition (DecomposeFn, op spec §3): the micro-graph verifies
// (V1-V4), its output types equal the op's own shape inference, and running it node by node
// with the cpu kernels reproduces the op's own cpu result within BUILD-011 tolerance.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "common/tolerance.h"
#include "cpp/ops/graph_runner.h"
#include "frame/ops/op_registry.h"

namespace frame::test {
namespace {

// Extra attribute variants worth checking for some decomposable ops (defaults always run).
std::vector<ir::AttrMap> attr_variants(const std::string& op) {
  std::vector<ir::AttrMap> v = {{}};
  if (op == "gelu") v.push_back({{"approximate", std::string("tanh")}});
  if (op == "elu") v.push_back({{"alpha", 0.5}});
  if (op == "selu") v.push_back({{"alpha", 2.0}, {"gamma", 3.0}});
  return v;
}

Tensor random_tensor(DTypeCode d, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(d, shape).value();
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  static_cast<void>(dispatch_dtype(d, [&]<typename T>() {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        t.data<T>()[i] = u(rng) > 0;
      } else {
        t.data<T>()[i] = from_compute<T>(static_cast<compute_t<T>>(u(rng)));
      }
    }
  }));
  return t;
}

ops::NodeContext context_for(const OpCall& call, const ops::OpSchema* schema) {
  ops::NodeContext ctx;
  ctx.op = call.op;
  ctx.node_name = call.node_name;
  ctx.attrs = &call.attrs;
  ctx.schema = schema;
  ctx.num_outputs = call.num_outputs;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    ctx.input_types.push_back(t.defined() ? ir::TensorType{t.dtype(), t.shape()}
                                          : ir::TensorType{});
    ctx.input_present.push_back(t.defined());
    const bool constant = std::find(call.constant_inputs.begin(), call.constant_inputs.end(), i) !=
                          call.constant_inputs.end();
    ctx.input_constants.push_back(constant ? &t : nullptr);
  }
  return ctx;
}

// Hand-made calls for ops whose inputs are not "every input the same dtype and shape" (index
// inputs, constant sizes); empty for the others, which get the generic inputs.
std::vector<OpCall> hand_made_calls(const std::string& op, DTypeCode d, std::mt19937& rng) {
  std::vector<OpCall> calls;
  if (op == "softmax_cross_entropy_loss") {
    Tensor labels = Tensor::empty(DTypeCode::kInt64, {2, 3}).value();
    const int64_t lv[] = {0, 3, -1, 2, 1, 3};
    for (int64_t i = 0; i < 6; ++i) labels.data<int64_t>()[i] = lv[i];
    for (const char* red : {"none", "sum", "mean"}) {
      for (bool weighted : {false, true}) {
        OpCall c;
        c.op = op;
        c.attrs = {{"reduction", std::string(red)}, {"ignore_index", int64_t{-1}}};
        c.inputs = {random_tensor(d, {2, 4, 3}, rng), labels,
                    weighted ? random_tensor(d, {4}, rng) : Tensor()};
        if (!weighted) c.inputs.pop_back();
        c.num_outputs = 2;
        calls.push_back(std::move(c));
      }
    }
  }
  if (op == "einsum") {
    // Equations lowered to one batched matmul (batch, contracted and kept labels in any
    // order, uppercase, ellipsis), and ones the decomposition declines (a diagonal, a sum
    // within one operand, a broadcast, three operands): those keep the einsum kernel.
    const std::vector<std::pair<std::string, std::vector<Shape>>> eqs = {
        {"ij,jk->ik", {{3, 4}, {4, 5}}},
        {"bhnid,bhnjd->bhnij", {{1, 2, 2, 5, 3}, {1, 2, 2, 4, 3}}},
        {"bhnij,bhnjd->bhnid", {{1, 2, 2, 5, 4}, {1, 2, 2, 4, 3}}},
        {"ij,kj->ki", {{3, 4}, {5, 4}}},
        {"bIj,Jj->bIJ", {{2, 3, 4}, {5, 4}}},
        {"i,i->", {{33}, {33}}},
        {"i,j->ij", {{3}, {4}}},
        {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}},
        {"abc,cd->dba", {{2, 3, 4}, {4, 5}}},
        {"ii,ij->j", {{3, 3}, {3, 2}}},
        {"ij,jk->k", {{3, 4}, {4, 5}}},
        {"...ij,...jk->...ik", {{2, 1, 3, 4}, {3, 4, 2}}},
        {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
    };
    for (const auto& [eq, shapes] : eqs) {
      OpCall c;
      c.op = op;
      c.attrs = {{"equation", eq}};
      for (const Shape& sh : shapes) c.inputs.push_back(random_tensor(d, sh, rng));
      calls.push_back(std::move(c));
    }
  }
  const bool window = op == "hann_window" || op == "hamming_window" || op == "blackman_window";
  if (window && d == DTypeCode::kFloat32) {
    for (int64_t size : {int64_t{10}, int64_t{1}, int64_t{0}, int64_t{64}}) {
      for (int64_t periodic : {int64_t{0}, int64_t{1}}) {
        for (int64_t out_type : {int64_t{1}, int64_t{11}, int64_t{10}}) {
          OpCall c;
          c.op = op;
          c.attrs = {{"periodic", periodic}, {"output_datatype", out_type}};
          Tensor n = Tensor::empty(DTypeCode::kInt64, {}).value();
          *n.data<int64_t>() = size;
          c.inputs = {n};
          c.constant_inputs = {0};
          calls.push_back(std::move(c));
        }
      }
    }
  }
  return calls;
}

std::vector<std::string> decomposable_ops() {
  std::vector<std::string> names;
  for (const ops::OpSchema* s : ops::OpRegistry::global().list()) {
    if (s->decompose_fn() != nullptr) names.push_back(s->name());
  }
  return names;
}

class Decomposition : public ::testing::TestWithParam<std::string> {};

TEST_P(Decomposition, VerifiesTypesAndMatchesCpuKernel) {
  const std::string& op = GetParam();
  const ops::OpSchema* schema = ops::OpRegistry::global().find(op);
  ASSERT_NE(schema, nullptr);
  const ir::OpQuery query = ops::make_op_query();
  std::mt19937 rng(7);
  int checked = 0;
  for (DTypeCode d :
       {DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kFloat16, DTypeCode::kBFloat16}) {
    std::vector<OpCall> calls = hand_made_calls(op, d, rng);
    if (calls.empty()) {
      for (const Shape& shape : {Shape{7}, Shape{2, 3}, Shape{}}) {
        for (const ir::AttrMap& attrs : attr_variants(op)) {
          OpCall call;
          call.op = op;
          call.attrs = attrs;
          // Every required output (multi-output ops such as dynamic_quantize_linear).
          call.num_outputs = static_cast<size_t>(schema->min_output_count());
          // Generic inputs: every required input with the same dtype and shape.
          for (int i = 0; i < schema->min_input_count(); ++i) {
            call.inputs.push_back(random_tensor(d, shape, rng));
          }
          calls.push_back(std::move(call));
        }
      }
    }
    {
      for (const OpCall& call : calls) {
        const Shape& shape = call.inputs.empty() ? Shape{} : call.inputs[0].shape();
        const ops::NodeContext ctx = context_for(call, schema);
        Result<std::vector<ir::TensorType>> own = schema->infer(ctx);
        if (!own.is_ok()) continue;  // this dtype/shape is not valid for the op
        SCOPED_TRACE(fmt::format("{} on {}{}", op, dtype_name(d), shape_to_string(shape)));

        Result<ir::Graph> g = schema->decompose_fn()(ctx);
        // A decomposition may decline a configuration (kUnimplemented): the node keeps its
        // kernel (decomposition pass).
        if (!g.is_ok() && g.status().code() == StatusCode::kUnimplemented) continue;
        ASSERT_TRUE(g.is_ok()) << g.status().to_string();
        Status v = g->verify(query);
        ASSERT_TRUE(v.is_ok()) << v.to_string();
        ASSERT_EQ(g->outputs().size(), own->size());
        for (size_t k = 0; k < own->size(); ++k) {
          ASSERT_TRUE(g->value(g->outputs()[k]).type.has_value());
          EXPECT_EQ(*g->value(g->outputs()[k]).type, (*own)[k]) << "output " << k;
        }

        Result<std::vector<Tensor>> direct = run_op(call);
        ASSERT_TRUE(direct.is_ok()) << direct.status().to_string();
        Result<std::vector<Tensor>> via_graph = run_graph(*g, call.inputs);
        ASSERT_TRUE(via_graph.is_ok()) << via_graph.status().to_string();
        // A chain of 16-bit ops rounds after every node, so it gets the multi-op class.
        const ToleranceClass cls = (d == DTypeCode::kFloat16 || d == DTypeCode::kBFloat16)
                                       ? ToleranceClass::kDeepNetwork
                                       : ToleranceClass::kOp;
        for (size_t k = 0; k < direct->size(); ++k) {
          CompareResult r =
              compare_tensors((*via_graph)[k], (*direct)[k], tolerance_for((*own)[k].dtype, cls));
          EXPECT_TRUE(r.ok) << "output " << k << ": " << r.message;
        }
        ++checked;
      }
    }
  }
  if (checked == 0) {
    GTEST_SKIP() << op << ": generic inputs (same dtype and shape for every required input) are "
                 << "rejected by its shape inference; it needs hand-made inputs here";
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, Decomposition, ::testing::ValuesIn(decomposable_ops()),
                         [](const auto& info) { return info.param; });

// MaxViT's and attention's einsums are one batched matmul; a diagonal is declined.
TEST(DecompositionCoverage, EinsumLowersAttentionEquationsToOneMatmul) {
  const ops::OpSchema* s = ops::OpRegistry::global().find("einsum");
  ASSERT_NE(s, nullptr);
  std::mt19937 rng(3);
  for (const auto& [eq, lowered] : std::vector<std::pair<std::string, bool>>{
           {"bhnid,bhnjd->bhnij", true}, {"ii,ij->j", false}}) {
    OpCall c;
    c.op = "einsum";
    c.attrs = {{"equation", eq}};
    const bool attention = lowered;
    c.inputs = {
        random_tensor(DTypeCode::kFloat32, attention ? Shape{1, 4, 2, 7, 8} : Shape{3, 3}, rng),
        random_tensor(DTypeCode::kFloat32, attention ? Shape{1, 4, 2, 7, 8} : Shape{3, 2}, rng)};
    Result<ir::Graph> g = s->decompose_fn()(context_for(c, s));
    ASSERT_EQ(g.is_ok(), lowered) << eq << ": " << g.status().to_string();
    if (!lowered) {
      EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
      continue;
    }
    int matmuls = 0;
    for (size_t i = 0; i < g->num_nodes(); ++i) {
      matmuls += g->node(static_cast<ir::NodeId>(i)).op == "matmul" ? 1 : 0;
    }
    EXPECT_EQ(matmuls, 1) << eq;
  }
}

TEST(DecompositionCoverage, CompositeActivationsHaveOne) {
  for (const char* op : {"gelu", "hard_swish", "mish", "softplus", "elu", "selu"}) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_NE(s->decompose_fn(), nullptr) << op;
  }
}

}  // namespace
}  // namespace frame::test
