#pragma once
/// \file
/// IR value types and attributes: `TensorType`, `AttrValue`, `AttrType`, `attr_type_of`.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/tensor.h"

namespace frame::ir {

class Graph;

/// Static type of an IR value: dtype + fully known shape. There are no unknown or symbolic
/// dims (ARCH-044): models with dynamic dims are compiled per concrete shape.
struct TensorType {
  DTypeCode dtype = DTypeCode::kFloat32;
  Shape shape;
  bool operator==(const TensorType&) const = default;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// "f32[1,3,224,224]"; a scalar prints as "f32[]".
  std::string to_string() const;
};

/// Kind of an attribute value. Mirrors ONNX AttributeProto types in scope.
enum class AttrType : uint8_t { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor, kGraph };

/// "int", "float", "string", "ints", "floats", "strings", "tensor", "graph".
std::string_view attr_type_name(AttrType t);

/// Attribute value. Floats are stored as double (ONNX stores float32; the importer widens).
/// A graph attribute is shared and immutable (e.g. the body of a fused group).
using AttrValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                 std::vector<std::string>, Tensor, std::shared_ptr<const Graph>>;

/// The AttrType of a value (index of the variant alternative).
inline AttrType attr_type_of(const AttrValue& v) { return static_cast<AttrType>(v.index()); }

/// Maps a C++ attribute type to its AttrType (for NodeContext::attr<T>).
template <typename T>
inline constexpr int kAttrIndex = -1;
template <>
inline constexpr int kAttrIndex<int64_t> = 0;
template <>
inline constexpr int kAttrIndex<double> = 1;
template <>
inline constexpr int kAttrIndex<std::string> = 2;
template <>
inline constexpr int kAttrIndex<std::vector<int64_t>> = 3;
template <>
inline constexpr int kAttrIndex<std::vector<double>> = 4;
template <>
inline constexpr int kAttrIndex<std::vector<std::string>> = 5;
template <>
inline constexpr int kAttrIndex<Tensor> = 6;
template <>
inline constexpr int kAttrIndex<std::shared_ptr<const Graph>> = 7;

/// Structural equality (tensors compared bytewise, graphs by printed text).
bool attr_equal(const AttrValue& a, const AttrValue& b);
/// Hash consistent with attr_equal (used by CSE).
size_t attr_hash(const AttrValue& v);

}  // namespace frame::ir
