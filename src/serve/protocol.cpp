// Datatype names and error mapping of the Open Inference Protocol (frame/serve/protocol.h).
#include "frame/serve/protocol.h"

#include <array>
#include <utility>

namespace frame::serve {
namespace {

// The protocol's datatype names ("Tensor Data Types") and frame's element types.
constexpr std::array<std::pair<std::string_view, DTypeCode>, 14> kDatatypes = {{
    {"BOOL", DTypeCode::kBool},
    {"UINT8", DTypeCode::kUInt8},
    {"UINT16", DTypeCode::kUInt16},
    {"UINT32", DTypeCode::kUInt32},
    {"UINT64", DTypeCode::kUInt64},
    {"INT8", DTypeCode::kInt8},
    {"INT16", DTypeCode::kInt16},
    {"INT32", DTypeCode::kInt32},
    {"INT64", DTypeCode::kInt64},
    {"FP16", DTypeCode::kFloat16},
    {"BF16", DTypeCode::kBFloat16},
    {"FP32", DTypeCode::kFloat32},
    {"FP64", DTypeCode::kFloat64},
    {"BYTES", DTypeCode::kFloat32},  // not a frame type: refused by parse_datatype
}};

}  // namespace

std::string_view datatype_name(DTypeCode dtype) {
  for (const auto& [name, code] : kDatatypes) {
    if (code == dtype && name != "BYTES") return name;
  }
  return "UNKNOWN";
}

Result<DTypeCode> parse_datatype(std::string_view name) {
  if (name == "BYTES") {
    return Status(StatusCode::kUnimplemented,
                  "datatype BYTES is not supported: frame has no string tensors");
  }
  for (const auto& [n, code] : kDatatypes) {
    if (n == name) return code;
  }
  return Status(StatusCode::kInvalidArgument,
                "unknown datatype '" + std::string(name) +
                    "' (expected BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, "
                    "FP16, BF16, FP32 or FP64)");
}

int http_status_of(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnimplemented:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kFailedPrecondition:
      return 503;
    default:
      return 500;
  }
}

}  // namespace frame::serve
