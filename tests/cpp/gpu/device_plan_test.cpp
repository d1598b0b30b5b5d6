// The device-group memory planner both GPU backends use (src/backends/gpu/device_plan.h),
// host-side: which values live on the device and for how long, where they are placed, which
// cross the group's boundary, against plans worked out by hand.

#include "backends/gpu/device_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "frame/ir/graph.h"

namespace frame::backends::gpu {
namespace {

// x [256] f32 (1 KiB) -> relu r -> mul(r, w) m -> add(m, x) y; w a constant [256].
struct Chain {
  ir::Graph g{"chain"};
  ir::ValueId x, w, r, m, y;
  std::vector<ir::NodeId> nodes;
  Chain() {
    const ir::TensorType t{DTypeCode::kFloat32, {256}};
    x = g.add_input("x", t);
    w = g.add_constant("w", Tensor::from_vector<float>({256}, std::vector<float>(256, 2.0F)));
    auto add = [&](const char* op, std::vector<ir::ValueId> in, const char* name) {
      const ir::NodeId n = *g.create_node(op, name, std::move(in), 1, {}, {name});
      g.value(g.node(n).outputs[0]).type = t;
      nodes.push_back(n);
      return g.node(n).outputs[0];
    };
    r = add("relu", {x}, "r");
    m = add("mul", {r, w}, "m");
    y = add("add", {m, x}, "y");
    g.add_output(y);
  }
  ops::DeviceGroupSpec spec() const { return {&g, nodes, {x, w}, {y}}; }
  static std::vector<NodeIO> io() {
    return {{{1024}, 1024}, {{1024, 1024}, 1024}, {{1024, 1024}, 1024}};
  }
};

const DeviceSlot& slot_of(const DevicePlan& p, ir::ValueId v) {
  auto it = std::find_if(p.slots.begin(), p.slots.end(),
                         [&](const DeviceSlot& s) { return s.value == v; });
  EXPECT_NE(it, p.slots.end());
  return *it;
}

bool overlap(const DeviceSlot& a, const DeviceSlot& b) {
  const bool live = a.first <= b.last && b.first <= a.last;
  const bool bytes =
      a.block == b.block && a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
  return live && bytes;
}

TEST(GpuDevicePlan, LifetimesReuseAndBoundaryCopies) {
  Chain c;
  Result<DevicePlan> p = plan_device_group(c.spec(), Chain::io(), 256, SIZE_MAX, "test");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ASSERT_EQ(p->slots.size(), 5u);  // x, r, w, m, y
  // x: read by nodes 0 and 2; r: made by 0, read by 1; m: 1 -> 2; y: 2 -> the group's end (3).
  EXPECT_EQ(slot_of(*p, c.x).first, 0);
  EXPECT_EQ(slot_of(*p, c.x).last, 2);
  EXPECT_EQ(slot_of(*p, c.r).first, 0);
  EXPECT_EQ(slot_of(*p, c.r).last, 1);
  EXPECT_EQ(slot_of(*p, c.m).first, 1);
  EXPECT_EQ(slot_of(*p, c.m).last, 2);
  EXPECT_EQ(slot_of(*p, c.y).last, 3);
  // The constant is alive for the whole run and uploaded once (not a per-run copy).
  EXPECT_TRUE(slot_of(*p, c.w).constant);
  EXPECT_EQ(slot_of(*p, c.w).first, 0);
  EXPECT_EQ(slot_of(*p, c.w).last, 3);
  EXPECT_EQ(p->copies_in(), 1u);   // x
  EXPECT_EQ(p->copies_out(), 1u);  // y
  EXPECT_TRUE(p->input_slot[0] != kNoSlot && p->input_slot[1] != kNoSlot);
  // No two slots alive at once share bytes; every offset is aligned. r (dead after node 1)
  // and y (made at node 2) may share: 4 KiB suffice for x, w, m and one of r / y.
  for (size_t i = 0; i < p->slots.size(); ++i) {
    EXPECT_EQ(p->slots[i].offset % 256, 0u);
    for (size_t j = i + 1; j < p->slots.size(); ++j) {
      EXPECT_FALSE(overlap(p->slots[i], p->slots[j]))
          << p->slots[i].name << " and " << p->slots[j].name;
    }
  }
  ASSERT_EQ(p->blocks.size(), 1u);
  EXPECT_EQ(p->device_bytes, 4096u);
  // Node wiring: node 1 reads r and w, writes m.
  EXPECT_EQ(p->node_inputs[1].size(), 2u);
  EXPECT_EQ(p->slots[static_cast<size_t>(p->node_inputs[1][0])].value, c.r);
  EXPECT_EQ(p->slots[static_cast<size_t>(p->node_inputs[1][1])].value, c.w);
  EXPECT_EQ(p->slots[static_cast<size_t>(p->node_output[1])].value, c.m);
}

TEST(GpuDevicePlan, SpreadsOverBlocksOfTheLargestBufferSize) {
  Chain c;
  // At most 2 KiB per buffer: four 1 KiB values alive at node 2 need two blocks.
  Result<DevicePlan> p = plan_device_group(c.spec(), Chain::io(), 256, 2048, "test");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->blocks.size(), 2u);
  for (size_t b : p->blocks) EXPECT_LE(b, 2048u);
  for (size_t i = 0; i < p->slots.size(); ++i) {
    for (size_t j = i + 1; j < p->slots.size(); ++j) {
      EXPECT_FALSE(overlap(p->slots[i], p->slots[j]));
    }
  }
  Result<DevicePlan> too_small = plan_device_group(c.spec(), Chain::io(), 256, 512, "test");
  ASSERT_FALSE(too_small.is_ok());
  EXPECT_NE(too_small.status().message().find("more than the device's largest buffer"),
            std::string::npos)
      << too_small.status().message();
}

TEST(GpuDevicePlan, InputsOnlyTheHostReadsGetNoSlotAndBadBytesAreErrors) {
  Chain c;
  std::vector<NodeIO> io = Chain::io();
  io[1].in_bytes[1] = 0;  // node m reads w on the host (e.g. a shape input)
  Result<DevicePlan> p = plan_device_group(c.spec(), io, 256, SIZE_MAX, "test");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->input_slot[1], kNoSlot);
  EXPECT_EQ(p->node_inputs[1][1], kNoSlot);
  io = Chain::io();
  io[2].in_bytes[0] = 512;
  Result<DevicePlan> bad = plan_device_group(c.spec(), io, 256, SIZE_MAX, "test");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), "node 'y' (add): input 0 has 1024 bytes, the kernel reads 512");
}

// An input read back after the run (NodeIO::keep_input) lives to the group's end, so no later
// value reuses its bytes: r, read by node 1 and kept, can no longer share with y.
TEST(GpuDevicePlan, KeptInputsLiveToTheGroupsEnd) {
  Chain c;
  std::vector<NodeIO> io = Chain::io();
  io[1].keep_input = 0;
  Result<DevicePlan> p = plan_device_group(c.spec(), io, 256, SIZE_MAX, "test");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(slot_of(*p, c.r).last, 3);
  EXPECT_EQ(p->device_bytes, 5120u);  // x, r, w, m, y all distinct
  for (size_t i = 0; i < p->slots.size(); ++i) {
    for (size_t j = i + 1; j < p->slots.size(); ++j) {
      EXPECT_FALSE(overlap(p->slots[i], p->slots[j]));
    }
  }
}

}  // namespace
}  // namespace frame::backends::gpu
