// The ONNX op table never has two rows for one (domain, op type, opset): the first would win
// silently when a new row is added next to an old one.
#include <gtest/gtest.h>

#include "frame/onnx/onnx.h"

namespace frame::onnx {
namespace {

OpTableEntry row(std::string op, int since, int until, std::string frame_op,
                 std::string domain = "") {
  return OpTableEntry{std::move(domain), std::move(op), since, until, std::move(frame_op), ""};
}

TEST(OpTable, BuiltinRowsAreDisjoint) {
  std::vector<OpTableEntry> rows = op_table();
  ASSERT_GT(rows.size(), 100u);
  EXPECT_EQ(op_table_overlaps(rows), std::vector<std::string>{});
}

TEST(OpTable, OpenRowAndNewerRowOverlap) {
  // A rewrite row for Identity from opset 1 on, then a plain row added for opset 13.
  std::vector<std::string> o =
      op_table_overlaps({row("Identity", 1, 0, "identity_v1"), row("Identity", 13, 0, "identity")});
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0],
            "Identity: rows for opsets 1.. (-> 'identity_v1') and 13.. (-> 'identity') overlap");
}

TEST(OpTable, ClosedRangesOverlapOnlyWhenTheyShareAnOpset) {
  EXPECT_TRUE(op_table_overlaps({row("Pad", 1, 10, "pad"), row("Pad", 11, 0, "pad")}).empty());
  EXPECT_EQ(op_table_overlaps({row("Pad", 1, 11, "pad"), row("Pad", 11, 0, "pad")}).size(), 1u);
  // Same op type in other domains, and other op types, never overlap.
  EXPECT_TRUE(op_table_overlaps({row("Gelu", 1, 0, "gelu"), row("Gelu", 1, 0, "gelu", "com.x"),
                                 row("Relu", 1, 0, "relu")})
                  .empty());
  std::vector<std::string> o =
      op_table_overlaps({row("Gelu", 1, 0, "gelu", "com.x"), row("Gelu", 1, 0, "gelu2", "com.x")});
  ASSERT_EQ(o.size(), 1u);
  EXPECT_NE(o[0].find("com.x::Gelu"), std::string::npos) << o[0];
}

}  // namespace
}  // namespace frame::onnx
