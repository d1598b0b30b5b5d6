// The onednn attention pattern and kernel (src/backends/onednn/attention_pattern.cpp,
// kernels/attention.cpp; docs/backends/onednn.md#attention), and the Dropout decomposition that
// lets Swin's attention fuse. Each fused graph is checked against the same graph compiled for
// the cpu backend alone, where the unfused MatMul, Mul, Add, Where and Softmax cpu kernels
// compute it (an independent reference), at 1 and 2 threads; the rewrite's node counts; the
// cases where it must not fire; and the arena bound the fusion exists for.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>

#include "cpp/onednn/linear_test_util.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;
using ir::ValueId;

struct Dims {
  ints batch;  // leading dims of Q, KT and V
  int64_t sq, sk, d, dv;
};

Shape with(const ints& batch, std::initializer_list<int64_t> last) {
  Shape s = batch;
  s.insert(s.end(), last);
  return s;
}

// Q, KT and V as graph inputs; returns {Q, KT, V}.
std::array<ValueId, 3> qkv(ir::Graph& g, const Dims& d) {
  return {g.add_input("q", ir::TensorType{DTypeCode::kFloat32, with(d.batch, {d.sq, d.d})}),
          g.add_input("kt", ir::TensorType{DTypeCode::kFloat32, with(d.batch, {d.d, d.sk})}),
          g.add_input("v", ir::TensorType{DTypeCode::kFloat32, with(d.batch, {d.sk, d.dv})})};
}

runtime::TensorMap feeds(const Dims& d, uint32_t seed) {
  return {{"q", grid_tensor(with(d.batch, {d.sq, d.d}), seed)},
          {"kt", grid_tensor(with(d.batch, {d.d, d.sk}), seed + 1)},
          {"v", grid_tensor(with(d.batch, {d.sk, d.dv}), seed + 2)}};
}

ValueId scalar(ir::Graph& g, const std::string& name, float v) {
  return g.add_constant(name, Tensor::scalar<float>(v));
}

// BERT: softmax(Q x KT * c + mask) x V, the additive mask [B, 1, 1, Sk] a graph input.
ir::Graph bert_form(const Dims& d) {
  ir::Graph g("bert_attention");
  auto [q, kt, v] = qkv(g, d);
  const ValueId mask =
      g.add_input("mask", ir::TensorType{DTypeCode::kFloat32, {d.batch[0], 1, 1, d.sk}});
  ValueId s = add_op(g, "matmul", "qk", {q, kt});
  s = add_op(g, "mul", "scale", {s, scalar(g, "c", 0.125F)});
  s = add_op(g, "add", "add_mask", {s, mask});
  const ValueId p = add_op(g, "softmax", "softmax", {s}, {{"axis", int64_t{-1}}});
  g.add_output(add_op(g, "matmul", "pv", {p, v}));
  return g;
}

// softmax(`scale_op`(Q x KT, c)) x V over graph inputs Q, KT and V.
ir::Graph scaled_attention(const std::string& name, const Dims& d, const std::string& scale_op,
                           float c) {
  ir::Graph g(name);
  auto [q, kt, v] = qkv(g, d);
  ValueId s = add_op(g, "matmul", "qk", {q, kt});
  s = add_op(g, scale_op, "scale", {s, scalar(g, "c", c)});
  const ValueId p = add_op(g, "softmax", "softmax", {s}, {{"axis", int64_t{-1}}});
  g.add_output(add_op(g, "matmul", "pv", {p, v}));
  return g;
}

TEST(OnednnAttention, BertAdditiveMaskFusesAndMatchesTheUnfusedGraph) {
  const Dims d{{2, 3}, 20, 20, 16, 16};
  ir::Graph g = bert_form(d);
  const ir::Graph low = lowered(g, {"onednn", "cpu"});
  EXPECT_EQ(count_op(low, "attention_internal"), 1);
  EXPECT_EQ(count_op(low, "softmax"), 0);
  EXPECT_EQ(count_op(low, "matmul"), 0);
  runtime::TensorMap in = feeds(d, 1);
  // A padding mask: the last 5 keys of batch 1 masked with a large negative value.
  Tensor mask = Tensor::from_vector({2, 1, 1, 20}, std::vector<float>(40, 0.0F));
  for (int j = 15; j < 20; ++j) mask.data<float>()[20 + j] = -10000.0F;
  in.emplace("mask", mask);
  expect_same_as_unfused(g, in);
}

// GPT-2: where(causal, -inf, Q x KT * c) inside one fused elementwise group, then softmax.
TEST(OnednnAttention, GptCausalWhereFusesAndMatchesTheUnfusedGraph) {
  const Dims d{{1, 4}, 33, 33, 8, 12};
  ir::Graph g("gpt_attention");
  auto [q, kt, v] = qkv(g, d);
  std::vector<uint8_t> upper(33 * 33);
  for (int i = 0; i < 33; ++i) {
    for (int j = 0; j < 33; ++j) upper[i * 33 + j] = j > i ? 1 : 0;
  }
  Tensor causal = *Tensor::empty(DTypeCode::kBool, {33, 33});
  std::copy(upper.begin(), upper.end(), causal.data<uint8_t>());
  const ValueId cond = g.add_constant("causal", causal);
  ValueId s = add_op(g, "matmul", "qk", {q, kt});
  s = add_op(g, "mul", "scale", {s, scalar(g, "c", 0.35355339F)});
  s = add_op(g, "where", "mask",
             {cond, scalar(g, "neg_inf", -std::numeric_limits<float>::infinity()), s});
  const ValueId p = add_op(g, "softmax", "softmax", {s}, {{"axis", int64_t{-1}}});
  g.add_output(add_op(g, "matmul", "pv", {p, v}));
  const ir::Graph low = lowered(g, {"onednn", "cpu"});
  EXPECT_EQ(count_op(low, "attention_internal"), 1);
  EXPECT_EQ(count_op(low, "fused_elementwise_internal"), 0);
  expect_same_as_unfused(g, feeds(d, 7));
}

// nn.MultiheadAttention / ViT: Q / c before the MatMul, rank 3; and where(mask, S, fill), the
// fill taken where the mask is false.
TEST(OnednnAttention, ScaledQueryAndFillWhereFalseFuse) {
  const Dims d{{6}, 17, 23, 8, 8};
  ir::Graph g("vit_attention");
  auto [q, kt, v] = qkv(g, d);
  const ValueId keep = g.add_input("keep", ir::TensorType{DTypeCode::kBool, {1, 23}});
  const ValueId qs = add_op(g, "div", "q_scale", {q, scalar(g, "c", 2.828427F)});
  ValueId s = add_op(g, "matmul", "qk", {qs, kt});
  s = add_op(g, "where", "mask", {keep, s, scalar(g, "fill", -1e9F)});
  const ValueId p = add_op(g, "softmax", "softmax", {s}, {{"axis", int64_t{-1}}});
  g.add_output(add_op(g, "matmul", "pv", {p, v}));
  const ir::Graph low = lowered(g, {"onednn", "cpu"});
  EXPECT_EQ(count_op(low, "attention_internal"), 1);
  EXPECT_EQ(count_op(low, "div"), 0);
  runtime::TensorMap in = feeds(d, 11);
  Tensor k = *Tensor::empty(DTypeCode::kBool, {1, 23});
  for (int j = 0; j < 23; ++j) k.data<uint8_t>()[j] = j % 3 != 0 ? 1 : 0;
  in.emplace("keep", k);
  expect_same_as_unfused(g, in);
}

// Swin: Q * c, then a constant relative-position bias [1, H, S, S] broadcast over windows.
TEST(OnednnAttention, ConstantBiasOverWindowsFuses) {
  const Dims d{{5, 3}, 49, 49, 32, 32};
  ir::Graph g("swin_attention");
  auto [q, kt, v] = qkv(g, d);
  const ValueId bias = g.add_constant("bias", grid_tensor({1, 3, 49, 49}, 5));
  const ValueId qs = add_op(g, "mul", "q_scale", {scalar(g, "c", 0.17677669F), q});
  ValueId s = add_op(g, "matmul", "qk", {qs, kt});
  s = add_op(g, "add", "add_bias", {bias, s});
  const ValueId p = add_op(g, "softmax", "softmax", {s}, {{"axis", int64_t{-1}}});
  g.add_output(add_op(g, "matmul", "pv", {p, v}));
  EXPECT_EQ(count_op(lowered(g, {"onednn", "cpu"}), "attention_internal"), 1);
  expect_same_as_unfused(g, feeds(d, 21));
}

// Query rows split into several blocks with a partial last one (Sk = 1100: 119 rows a block).
TEST(OnednnAttention, LongKeysSplitQueriesIntoBlocks) {
  const Dims d{{1, 2}, 300, 1100, 8, 4};
  const ir::Graph g = scaled_attention("long_attention", d, "mul", 0.25F);
  EXPECT_EQ(count_op(lowered(g, {"onednn", "cpu"}), "attention_internal"), 1);
  expect_same_as_unfused(g, feeds(d, 31));
}

// A head dim of 0: every score is 0, so each row's softmax is uniform and O is the mean of V
// (dnnl_sgemm refuses K = 0; a tester found the fused node failing here).
TEST(OnednnAttention, AnEmptyHeadDimGivesTheMeanOfV) {
  const Dims d{{2, 3}, 5, 7, 0, 4};
  const ir::Graph g = scaled_attention("empty_head", d, "div", 2.0F);
  EXPECT_EQ(count_op(lowered(g, {"onednn", "cpu"}), "attention_internal"), 1);
  expect_same_as_unfused(g, feeds(d, 71));
}

// The point of the fusion: at S = 512 the scores never take arena space (issue: the node's
// arena below B * H * S * S * 4 bytes), where the unfused graph holds them.
TEST(OnednnAttention, ScoresAtSequence512StayOutOfTheArena) {
  const Dims d{{1, 4}, 512, 512, 32, 32};
  ir::Graph g = bert_form(d);
  const size_t scores_bytes = size_t{1} * 4 * 512 * 512 * sizeof(float);
  Result<runtime::Executable> fused = runtime::compile(g, uncached({"onednn", "cpu"}));
  Result<runtime::Executable> unfused = runtime::compile(g, uncached({"cpu"}));
  ASSERT_TRUE(fused.is_ok()) << fused.status().message();
  ASSERT_TRUE(unfused.is_ok()) << unfused.status().message();
  EXPECT_LT(fused->report().peak_arena_bytes, scores_bytes);
  EXPECT_GE(unfused->report().peak_arena_bytes, scores_bytes);
  runtime::TensorMap in = feeds(d, 41);
  in.emplace("mask", Tensor::from_vector({1, 1, 1, 512}, std::vector<float>(512, 0.0F)));
  expect_same_as_unfused(g, in);
}

// No rewrite where a value inside the chain has another reader or is a graph output, where
// the softmax is not over the last axis, where P is MatMul's right operand, or on cpu.
TEST(OnednnAttention, DoesNotFireWhereTheChainIsNotPrivate) {
  const Dims d{{2}, 8, 8, 4, 4};
  const auto build = [&](int variant) {
    ir::Graph g("no_fuse");
    auto [q, kt, v] = qkv(g, d);
    ValueId s = add_op(g, "matmul", "qk", {q, kt});
    const ValueId scaled = add_op(g, "mul", "scale", {s, scalar(g, "c", 0.5F)});
    const int64_t axis = variant == 2 ? 1 : -1;
    const ValueId p = add_op(g, "softmax", "softmax", {scaled}, {{"axis", axis}});
    if (variant == 3) {
      const ValueId w = g.add_input("w", ir::TensorType{DTypeCode::kFloat32, {2, 8, 8}});
      g.add_output(add_op(g, "matmul", "pv", {w, p}));  // P as the right operand
    } else {
      g.add_output(add_op(g, "matmul", "pv", {p, v}));
    }
    if (variant == 0) g.add_output(scaled);  // the scaled scores are also an output
    if (variant == 1) g.add_output(add_op(g, "relu", "other_reader", {s}));
    return g;
  };
  for (int variant = 0; variant < 4; ++variant) {
    ir::Graph g = build(variant);
    EXPECT_EQ(count_op(lowered(g, {"onednn", "cpu"}), "attention_internal"), 0) << variant;
  }
  EXPECT_EQ(count_op(lowered(build(4), {"cpu"}), "attention_internal"), 0);
  EXPECT_EQ(count_op(lowered(build(4), {"onednn", "cpu"}), "attention_internal"), 1);
}

// `fused` (an attention_internal node) and `ref` (the unfused graph) compiled for cpu alone,
// run on `in`: equal outputs (BUILD-011 op class). Returns `fused`'s output (empty on failure).
Tensor expect_cpu_match(const ir::Graph& fused, const ir::Graph& ref, const runtime::TensorMap& in,
                        const std::string& what) {
  Result<runtime::Executable> a = runtime::compile(fused, uncached({"cpu"}));
  Result<runtime::Executable> e = runtime::compile(ref, uncached({"cpu"}));
  EXPECT_TRUE(a.is_ok() && e.is_ok()) << what;
  if (!a.is_ok() || !e.is_ok()) return Tensor();
  Result<runtime::TensorMap> got = a->run(in), want = e->run(in);
  EXPECT_TRUE(got.is_ok() && want.is_ok()) << what;
  if (!got.is_ok() || !want.is_ok()) return Tensor();
  const CompareResult c = compare_tensors(got->begin()->second, want->begin()->second,
                                          tolerance_for(DTypeCode::kFloat32));
  EXPECT_TRUE(c.ok) << what << ": " << c.message;
  return got->begin()->second;
}

// The cpu reference kernel of attention_internal (the fallback for a node the pattern created)
// against the unfused graph on cpu, with a broadcast bias and a mask both ways.
TEST(OnednnAttention, TheCpuKernelMatchesTheUnfusedGraph) {
  const Dims d{{2, 3}, 9, 13, 4, 5};
  const Tensor bias = grid_tensor({3, 1, 13}, 51);
  Tensor mask = *Tensor::empty(DTypeCode::kBool, {9, 1});
  for (int i = 0; i < 9; ++i) mask.data<uint8_t>()[i] = i % 2;
  for (int64_t when : {0, 1}) {
    ir::Graph ref("unfused");
    {
      auto [q, kt, v] = qkv(ref, d);
      ValueId s = add_op(ref, "matmul", "qk", {q, kt});
      s = add_op(ref, "mul", "scale", {s, scalar(ref, "c", 0.5F)});
      s = add_op(ref, "add", "bias", {s, ref.add_constant("b", bias)});
      const ValueId fill = scalar(ref, "fill", -3.0F);
      const ValueId m = ref.add_constant("m", mask);
      s = add_op(ref, "where", "mask",
                 when == 1 ? std::vector<ValueId>{m, fill, s} : std::vector<ValueId>{m, s, fill});
      const ValueId p = add_op(ref, "softmax", "softmax", {s}, {{"axis", int64_t{-1}}});
      ref.add_output(add_op(ref, "matmul", "pv", {p, v}));
    }
    ir::Graph fused("fused");
    {
      auto [q, kt, v] = qkv(fused, d);
      fused.add_output(
          add_op(fused, "attention_internal", "att",
                 {q, kt, v, fused.add_constant("b", bias), fused.add_constant("m", mask)},
                 {{"scale", 0.5}, {"mask_fill", -3.0}, {"mask_fill_when", when}}));
    }
    expect_cpu_match(fused, ref, feeds(d, 61), fmt::format("mask_fill_when {}", when));
  }
}

// nn.MultiheadAttention's head split and merge: Q, K and V come as [S, B*H, D] (rank 3) or
// [B, S, H, D] (rank 4) and are transposed to heads first (K to [.., D, S]); O is transposed
// back. All four transposes are taken into the node (q_perm, k_perm, v_perm, o_perm), unless
// `shared_q`: the transposed Q is also a graph output, so its transpose must stay.
ir::Graph head_split(const Shape& in, const ints& perm, const ints& k_perm, bool shared_q) {
  ir::Graph g("mha");
  const auto input = [&](const char* name) {
    return g.add_input(name, ir::TensorType{DTypeCode::kFloat32, in});
  };
  const ValueId qi = input("q"), ki = input("k"), vi = input("v");
  const ValueId q = add_op(g, "transpose", "q_heads", {qi}, {{"perm", perm}});
  const ValueId kt = add_op(g, "transpose", "k_heads", {ki}, {{"perm", k_perm}});
  const ValueId v = add_op(g, "transpose", "v_heads", {vi}, {{"perm", perm}});
  ValueId s = add_op(g, "matmul", "qk", {q, kt});
  s = add_op(g, "mul", "scale", {s, scalar(g, "c", 0.25F)});
  const ValueId p = add_op(g, "softmax", "softmax", {s}, {{"axis", int64_t{-1}}});
  const ValueId o = add_op(g, "matmul", "pv", {p, v});
  g.add_output(add_op(g, "transpose", "merge", {o}, {{"perm", perm}}));
  if (shared_q) g.add_output(q);
  return g;
}

TEST(OnednnAttention, TheHeadTransposesAreTakenIn) {
  struct Case {
    Shape in;
    ints perm, k_perm;
  };
  const std::vector<Case> cases = {
      {{11, 6, 8}, {1, 0, 2}, {1, 2, 0}},          // [S, B*H, D] -> [B*H, S, D]
      {{2, 9, 3, 4}, {0, 2, 1, 3}, {0, 2, 3, 1}},  // [B, S, H, D] -> [B, H, S, D]
      {{70, 2, 16}, {1, 0, 2}, {1, 2, 0}},         // 70 query rows: several row blocks
  };
  for (const Case& c : cases) {
    for (bool shared_q : {false, true}) {
      const ir::Graph g = head_split(c.in, c.perm, c.k_perm, shared_q);
      const ir::Graph low = lowered(g, {"onednn", "cpu"});
      EXPECT_EQ(count_op(low, "attention_internal"), 1);
      // Q's transpose stays where the graph also returns the transposed Q.
      EXPECT_EQ(count_op(low, "transpose"), shared_q ? 1 : 0) << shape_to_string(c.in);
      runtime::TensorMap in;
      uint32_t seed = 3;
      for (const char* name : {"q", "k", "v"}) in.emplace(name, grid_tensor(c.in, seed++));
      expect_same_as_unfused(g, in);
    }
  }
}

// K's rows are copied into a per-thread panel once per (kernel call, batch index): a later run
// whose K holds other values at the same address must not read the earlier panel. One head, so
// a thread's last item of one run and first item of the next share their batch index.
TEST(OnednnAttention, ALaterRunReadsItsOwnKeys) {
  const Shape in{70, 1, 16};
  const ir::Graph g = head_split(in, {1, 0, 2}, {1, 2, 0}, false);
  Result<runtime::Executable> ref = runtime::compile(g, uncached({"cpu"}));
  Result<runtime::Executable> fast = runtime::compile(g, uncached({"onednn", "cpu"}));
  ASSERT_TRUE(ref.is_ok() && fast.is_ok());
  runtime::TensorMap feeds_in;
  uint32_t seed = 40;
  for (const char* name : {"q", "k", "v"}) feeds_in.emplace(name, grid_tensor(in, seed++));
  for (int run = 0; run < 2; ++run) {
    if (run == 1) {
      // New keys written into the same buffer.
      const Tensor fresh = grid_tensor(in, 99);
      std::copy_n(fresh.data<float>(), fresh.numel(), feeds_in.at("k").data<float>());
    }
    Result<runtime::TensorMap> got = fast->run(feeds_in), want = ref->run(feeds_in);
    ASSERT_TRUE(got.is_ok() && want.is_ok());
    const CompareResult c = compare_tensors(got->begin()->second, want->begin()->second,
                                            tolerance_for(DTypeCode::kFloat32));
    EXPECT_TRUE(c.ok) << "run " << run << ": " << c.message;
  }
}

// The cpu reference kernel reads Q, KT and V and writes O through q_perm, k_perm, v_perm and
// o_perm, as the transposes they stand for would (the unfused graph on cpu).
TEST(OnednnAttention, TheCpuKernelReadsAndWritesThroughPerms) {
  const Shape in{2, 7, 3, 4};  // [B, S, H, D]
  const ints perm{0, 2, 1, 3};
  const ir::Graph ref = head_split(in, perm, {0, 2, 3, 1}, false);
  ir::Graph fused("fused");
  {
    const auto input = [&](const char* name) {
      return fused.add_input(name, ir::TensorType{DTypeCode::kFloat32, in});
    };
    const ValueId q = input("q"), k = input("k"), v = input("v");
    fused.add_output(add_op(fused, "attention_internal", "att", {q, k, v},
                            {{"scale", 0.25},
                             {"q_perm", perm},
                             {"k_perm", ints{0, 2, 3, 1}},
                             {"v_perm", perm},
                             {"o_perm", perm}}));
  }
  runtime::TensorMap feeds_in;
  uint32_t seed = 21;
  for (const char* name : {"q", "k", "v"}) feeds_in.emplace(name, grid_tensor(in, seed++));
  EXPECT_EQ(expect_cpu_match(fused, ref, feeds_in, "perms").shape(), (Shape{2, 7, 3, 4}));
}

// The schema names what is wrong: the input and the shapes it expected, or the attribute.
TEST(OnednnAttention, TheSchemaRejectsMismatchedOperandsAndPerms) {
  struct Case {
    Shape kt;
    ir::AttrMap attrs;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{2, 5, 8}, {}, "input 1 (KT) has shape [2,5,8], expected [2,4,*]"},
      {{2, 4, 8},
       {{"q_perm", ints{0, 2, 1}}},
       "attribute 'q_perm' must be a permutation of the 3 axes that keeps the last one last, "
       "got [0,2,1]"},
      {{2, 4, 8},
       {{"k_perm", ints{2, 0, 1}}},
       "attribute 'k_perm' must be a permutation of the 3 axes that keeps the last one last or "
       "second to last, got [2,0,1]"},
  };
  for (const Case& c : cases) {
    ir::Graph g("bad");
    const ValueId q = g.add_input("q", ir::TensorType{DTypeCode::kFloat32, {2, 8, 4}});
    const ValueId kt = g.add_input("kt", ir::TensorType{DTypeCode::kFloat32, c.kt});
    const ValueId v = g.add_input("v", ir::TensorType{DTypeCode::kFloat32, {2, 8, 4}});
    auto id = g.create_node("attention_internal", "att", {q, kt, v}, 1, c.attrs);
    ASSERT_TRUE(id.is_ok());
    const ops::OpSchema* schema = ops::OpRegistry::global().find("attention_internal");
    ASSERT_NE(schema, nullptr);
    Result<std::vector<ir::TensorType>> r =
        schema->infer(ops::make_node_context(g, g.node(*id), schema));
    ASSERT_FALSE(r.is_ok()) << c.message;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
  }
}

// Dropout with ratio 0 in training mode (torchvision Swin's export) and eval-mode Dropout are
// the identity: no node is left, the output is the input and a read mask is all true. A
// training-mode Dropout with ratio 0.5 stays.
TEST(DropoutDecomposition, IdentityDropoutsLeaveNoNode) {
  for (int variant = 0; variant < 3; ++variant) {
    ir::Graph g("dropout");
    const ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {3, 5}});
    const float ratio = variant == 2 ? 0.5F : 0.0F;
    const bool training = variant != 1;
    Tensor tm = *Tensor::empty(DTypeCode::kBool, {});
    tm.data<uint8_t>()[0] = training ? 1 : 0;
    auto id = g.create_node("dropout", "drop",
                            {x, scalar(g, "ratio", ratio), g.add_constant("training", tm)}, 2);
    ASSERT_TRUE(id.is_ok());
    const ValueId y = add_op(g, "relu", "after", {g.node(*id).outputs[0]});
    g.add_output(y);
    const ValueId not_mask =
        variant == 1 ? add_op(g, "not", "mask_reader", {g.node(*id).outputs[1]}) : ir::kNoValue;
    if (variant == 1) g.add_output(not_mask);
    const ir::Graph low = lowered(g, {"onednn", "cpu"});
    EXPECT_EQ(count_op(low, "dropout"), variant == 2 ? 1 : 0) << variant;
    if (variant == 2) continue;
    Result<runtime::Executable> exe = runtime::compile(g, uncached({"onednn", "cpu"}));
    ASSERT_TRUE(exe.is_ok()) << exe.status().message();
    const Tensor in = grid_tensor({3, 5}, 3);
    Result<runtime::TensorMap> out = exe->run({{"x", in}});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    const Tensor& r = out->at(g.value(y).name);
    for (int64_t i = 0; i < 15; ++i) {
      EXPECT_EQ(r.data<float>()[i], std::max(0.0F, in.data<float>()[i])) << i;
    }
    if (variant == 1) {
      const Tensor& m = out->at(g.value(not_mask).name);
      for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(m.data<uint8_t>()[i], 0) << "not(mask) " << i;
    }
  }
}

}  // namespace
}  // namespace frame::test::linear
