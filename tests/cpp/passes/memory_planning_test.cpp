// memory-planning: golden slot tables for every setting, unused outputs, and a property
// check on random graphs that no two simultaneously live values share memory except an
// in-place output and the input it overwrites.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cpp/passes/fusion_test_util.h"
#include "frame/ir/text.h"
#include "frame/passes/pass.h"

namespace frame::passes {
namespace {

using ir::TensorType;
constexpr DTypeCode kF32 = DTypeCode::kFloat32;

using test::add_node;

// The slot table on one line ("name @offset bytesB[ in-place]; ...; peak N") so that each
// golden table reads as one expected string rather than a column of look-alike lines.
std::string plan(ir::Graph& g, bool inplace, bool reuse) {
  PassContext ctx;
  ctx.allow_inplace = inplace;
  ctx.reuse_buffers = reuse;
  auto p = make_pass("memory-planning");
  EXPECT_TRUE(p.is_ok());
  Status s = (*p)->run(g, ctx);
  if (!s.is_ok()) return s.to_string();
  std::string out;
  for (const auto& [v, slot] : ctx.buffers) {
    out += fmt::format("{} @{} {}B{}; ", g.value(v).name, slot.offset, slot.bytes,
                       slot.in_place ? " in-place" : "");
  }
  return out + fmt::format("peak {}", ctx.peak_arena_bytes);
}

// x -> r1 -> r2 -> r3 -> r4 (graph output), f32[16] = 64 bytes each.
ir::Graph relu_chain() {
  ir::Graph g;
  ir::ValueId v = g.add_input("x", TensorType{kF32, {16}});
  for (int i = 1; i <= 4; ++i) v = add_node(g, "relu", fmt::format("r{}", i), {v});
  g.add_output(v);
  EXPECT_TRUE(test::infer_types(g).is_ok());
  return g;
}

TEST(MemoryPlanning, ChainInPlace) {
  ir::Graph g = relu_chain();
  EXPECT_EQ(plan(g, true, true), "r1 @0 64B; r2 @0 64B in-place; r3 @0 64B in-place; peak 64");
}

// x -> relu r1 [2,8] -> flatten f [2,8] -> relu r2: the flatten (OpSchema::view_of_input 0)
// takes r1's buffer because it is r1's last reader; with r1 read again later it cannot.
TEST(MemoryPlanning, ViewOpTakesItsInputsBufferAtItsLastUse) {
  for (bool reread : {false, true}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", TensorType{kF32, {2, 8}});
    ir::ValueId r1 = add_node(g, "relu", "r1", {x});
    ir::ValueId f = add_node(g, "flatten", "f", {r1});
    ir::ValueId r2 = add_node(g, reread ? "add" : "relu", "r2",
                              reread ? std::vector<ir::ValueId>{f, r1} : std::vector{f});
    ir::ValueId r3 = add_node(g, "relu", "r3", {r2});
    g.add_output(r3);
    ASSERT_TRUE(test::infer_types(g).is_ok());
    EXPECT_EQ(plan(g, true, true),
              reread ? "r1 @0 64B; f @64 64B; r2 @64 64B in-place; peak 128"
                     : "r1 @0 64B; f @0 64B in-place; r2 @0 64B in-place; peak 64");
  }
}

TEST(MemoryPlanning, ChainReuseWithoutInPlace) {
  ir::Graph g = relu_chain();
  EXPECT_EQ(plan(g, false, true), "r1 @0 64B; r2 @64 64B; r3 @0 64B; peak 128");
}

TEST(MemoryPlanning, NoReuseGivesEveryValueItsOwnSlot) {
  ir::Graph g = relu_chain();
  EXPECT_EQ(plan(g, true, false), "r1 @0 64B; r2 @64 64B; r3 @128 64B; peak 192");
}

TEST(MemoryPlanning, UnusedOutputNeverAliasesALiveBuffer) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", TensorType{kF32, {16}});
  ir::ValueId a = add_node(g, "relu", "a", {x});
  add_node(g, "neg", "u", {a});  // never read, not an output
  g.add_output(add_node(g, "exp", "y", {a}));
  ASSERT_TRUE(test::infer_types(g).is_ok());
  EXPECT_EQ(plan(g, true, true), "a @0 64B; u @64 64B; peak 128");
}

TEST(MemoryPlanning, SizesAreAlignedAndBestFit) {
  // When small2 (f32[3] = 12B, 64 aligned) is placed, two holes are free: big's 256 bytes at 0
  // and small1's 64 bytes at 320 (sep keeps them apart). Best fit takes the smaller one.
  ir::Graph g;
  ir::ValueId xb = g.add_input("xb", TensorType{kF32, {64}});
  ir::ValueId xs = g.add_input("xs", TensorType{kF32, {3}});
  ir::ValueId big = add_node(g, "relu", "big", {xb});
  ir::ValueId sep = add_node(g, "relu", "sep", {xs});
  ir::ValueId s1 = add_node(g, "neg", "small1", {xs});
  g.add_output(add_node(g, "exp", "big2", {big}));  // frees big
  g.add_output(add_node(g, "exp", "s1o", {s1}));    // frees small1
  ir::ValueId s2 = add_node(g, "abs", "small2", {sep});
  g.add_output(add_node(g, "neg", "out", {s2}));
  ASSERT_TRUE(test::infer_types(g).is_ok());
  EXPECT_EQ(plan(g, false, true),
            "big @0 256B; sep @256 12B; small1 @320 12B; small2 @320 12B; peak 384");
}

// Expects every two planned values that are live at once and share bytes to be a handoff: an
// in-place output born exactly where the other dies and, with `heir_reads_donor`, one of its
// node's inputs.
void expect_only_handoffs_share(const ir::Graph& g, const PassContext& ctx, uint32_t seed,
                                bool heir_reads_donor) {
  auto order = g.topological_order();
  ASSERT_TRUE(order.is_ok());
  std::vector<int> def(g.num_values(), -1), last(g.num_values(), -1);
  for (size_t i = 0; i < order->size(); ++i) {
    const ir::Node& n = g.node((*order)[i]);
    for (ir::ValueId v : n.outputs) def[v] = last[v] = static_cast<int>(i);
  }
  for (size_t i = 0; i < order->size(); ++i) {
    for (ir::ValueId v : g.node((*order)[i]).inputs) last[v] = static_cast<int>(i);
  }
  auto takes_over = [&](ir::ValueId heir, const BufferSlot& slot, ir::ValueId donor) {
    if (!slot.in_place || def[heir] != last[donor]) return false;
    if (!heir_reads_donor) return true;
    const ir::Node& n = g.node(g.value(heir).producer);
    return std::find(n.inputs.begin(), n.inputs.end(), donor) != n.inputs.end();
  };
  for (const auto& [a, sa] : ctx.buffers) {
    for (const auto& [b, sb] : ctx.buffers) {
      if (a >= b) continue;
      const bool time = def[a] <= last[b] && def[b] <= last[a];
      const bool mem = sa.offset < sb.offset + sb.bytes && sb.offset < sa.offset + sa.bytes;
      if (!time || !mem) continue;
      EXPECT_TRUE(takes_over(b, sb, a) || takes_over(a, sa, b))
          << "seed " << seed << ": " << g.value(a).name << " and " << g.value(b).name
          << " overlap\n"
          << ir::print_text(g);
    }
  }
}

TEST(MemoryPlanning, RandomGraphsNeverShareLiveMemory) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    test::RandomDag d = test::random_elementwise_dag(seed, 15);
    ir::Graph& g = d.graph;
    for (bool inplace : {true, false}) {
      PassContext ctx;
      ctx.allow_inplace = inplace;
      auto p = make_pass("memory-planning");
      ASSERT_TRUE((*p)->run(g, ctx).is_ok());
      ASSERT_NO_FATAL_FAILURE(expect_only_handoffs_share(g, ctx, seed, false));
    }
  }
}

// Random elementwise DAGs with views (flatten, and flatten of a flatten) read by elementwise
// ops and graph outputs: two simultaneously live values share bytes only when one is an
// in-place output born where the other, one of its node's inputs, dies.
TEST(MemoryPlanning, RandomGraphsWithViewsNeverShareLiveMemory) {
  int view_handoffs = 0;  // the check must see views take their input's buffer
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    test::RandomDag d = test::random_elementwise_dag(seed, 12);
    ir::Graph& g = d.graph;
    std::mt19937 rng(seed);
    std::vector<ir::ValueId> pool;
    for (ir::NodeId id : g.node_ids()) pool.push_back(g.node(id).outputs[0]);
    for (int k = 0; k < 6; ++k) {
      const ir::ValueId v = pool[rng() % pool.size()];
      ir::ValueId f = add_node(g, "flatten", fmt::format("f{}", k), {v});
      if (rng() % 2 == 0) f = add_node(g, "flatten", fmt::format("ff{}", k), {f});
      const ir::ValueId u = add_node(g, rng() % 2 ? "relu" : "exp", fmt::format("u{}", k), {f});
      pool.push_back(u);
      if (rng() % 3 == 0) g.add_output(f);
      if (rng() % 2 == 0) g.add_output(u);
    }
    ASSERT_TRUE(test::infer_types(g).is_ok());
    PassContext ctx;
    auto p = make_pass("memory-planning");
    ASSERT_TRUE((*p)->run(g, ctx).is_ok());
    for (const auto& [v, slot] : ctx.buffers) {
      view_handoffs += slot.in_place && g.node(g.value(v).producer).op == "flatten";
    }
    ASSERT_NO_FATAL_FAILURE(expect_only_handoffs_share(g, ctx, seed, true));
  }
  EXPECT_GT(view_handoffs, 20);
}

}  // namespace
}  // namespace frame::passes
