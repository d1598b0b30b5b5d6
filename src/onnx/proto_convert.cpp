// TensorProto / AttributeProto -> frame Tensor / AttrValue (ONNX IR spec, "Tensor" and
// "Attributes"; external data per onnx/docs/ExternalData.md).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "frame/ops/elementwise.h"
#include "onnx_internal.h"

namespace frame::onnx::detail {
namespace {

using ::onnx::TensorProto;

// Typed-field storage in ONNX: int32_data carries every integer type of 32 bits or less
// (and the raw bits of float16/bfloat16); int64_data carries int64; uint64_data uint32/64.
template <typename T, typename Src>
void copy_cast(const Src& src, Tensor& t) {
  T* dst = t.data<T>();
  for (int i = 0; i < src.size(); ++i) dst[i] = static_cast<T>(src.Get(i));
}

Status fill_from_typed_fields(const TensorProto& p, Tensor& t) {
  const int64_t n = t.numel();
  auto check_count = [&](int64_t have, std::string_view field) -> Status {
    if (have != n) {
      return invalid_argument("tensor '{}': {} has {} values, shape {} needs {}", p.name(), field,
                              have, shape_to_string(t.shape()), n);
    }
    return Status();
  };
  switch (t.dtype()) {
    case DTypeCode::kFloat32:
      FRAME_RETURN_IF_ERROR(check_count(p.float_data_size(), "float_data"));
      copy_cast<float>(p.float_data(), t);
      return Status();
    case DTypeCode::kFloat64:
      FRAME_RETURN_IF_ERROR(check_count(p.double_data_size(), "double_data"));
      copy_cast<double>(p.double_data(), t);
      return Status();
    case DTypeCode::kInt64:
      FRAME_RETURN_IF_ERROR(check_count(p.int64_data_size(), "int64_data"));
      copy_cast<int64_t>(p.int64_data(), t);
      return Status();
    case DTypeCode::kFloat16:
    case DTypeCode::kBFloat16: {
      FRAME_RETURN_IF_ERROR(check_count(p.int32_data_size(), "int32_data"));
      auto* dst = static_cast<uint16_t*>(t.raw_data());
      for (int i = 0; i < p.int32_data_size(); ++i) {
        dst[i] = static_cast<uint16_t>(p.int32_data(i));
      }
      return Status();
    }
    case DTypeCode::kInt32:
      FRAME_RETURN_IF_ERROR(check_count(p.int32_data_size(), "int32_data"));
      copy_cast<int32_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kInt16:
      FRAME_RETURN_IF_ERROR(check_count(p.int32_data_size(), "int32_data"));
      copy_cast<int16_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kInt8:
      FRAME_RETURN_IF_ERROR(check_count(p.int32_data_size(), "int32_data"));
      copy_cast<int8_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kUInt8:
      FRAME_RETURN_IF_ERROR(check_count(p.int32_data_size(), "int32_data"));
      copy_cast<uint8_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kUInt16:
      FRAME_RETURN_IF_ERROR(check_count(p.int32_data_size(), "int32_data"));
      copy_cast<uint16_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kUInt32:
      FRAME_RETURN_IF_ERROR(check_count(p.uint64_data_size(), "uint64_data"));
      copy_cast<uint32_t>(p.uint64_data(), t);
      return Status();
    case DTypeCode::kUInt64:
      FRAME_RETURN_IF_ERROR(check_count(p.uint64_data_size(), "uint64_data"));
      copy_cast<uint64_t>(p.uint64_data(), t);
      return Status();
    case DTypeCode::kBool: {
      FRAME_RETURN_IF_ERROR(check_count(p.int32_data_size(), "int32_data"));
      bool* dst = t.data<bool>();
      for (int i = 0; i < p.int32_data_size(); ++i) dst[i] = p.int32_data(i) != 0;
      return Status();
    }
  }
  return internal_error("unhandled dtype");
}

// Resolves an external-data location under the model directory; rejects escapes ("..",
// absolute paths) so a model cannot read arbitrary files.
Result<std::filesystem::path> external_path(const std::string& model_dir,
                                            const std::string& location,
                                            const std::string& tensor) {
  namespace fs = std::filesystem;
  if (model_dir.empty()) {
    return invalid_argument("tensor '{}': external data '{}' but the model directory is unknown",
                            tensor, location);
  }
  fs::path rel(location);
  if (rel.is_absolute() || location.empty()) {
    return invalid_argument("tensor '{}': external data location '{}' must be a relative path",
                            tensor, location);
  }
  for (const auto& part : rel) {
    if (part == "..") {
      return invalid_argument(
          "tensor '{}': external data location '{}' leaves the model "
          "directory",
          tensor, location);
    }
  }
  return fs::path(model_dir) / rel;
}

Status read_external(const TensorProto& p, const std::string& model_dir, Tensor& t) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset") {
        offset = std::stoll(kv.value());
      } else if (kv.key() == "length") {
        length = std::stoll(kv.value());
      }
    } catch (const std::exception&) {
      return invalid_argument("tensor '{}': external data key '{}' has a non-integer value '{}'",
                              p.name(), kv.key(), kv.value());
    }
  }
  FRAME_ASSIGN_OR_RETURN(std::filesystem::path path, external_path(model_dir, location, p.name()));
  const auto nbytes = static_cast<int64_t>(t.nbytes());
  if (offset < 0 || (length >= 0 && length != nbytes)) {
    return invalid_argument(
        "tensor '{}': external data offset {} length {} does not fit {} bytes "
        "of {}{}",
        p.name(), offset, length, nbytes, dtype_name(t.dtype()), shape_to_string(t.shape()));
  }
  // Opening a FIFO with no writer blocks forever; a directory opens but reads nothing.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return make_error(StatusCode::kIo, "tensor '{}': external data '{}' is not a regular file",
                      p.name(), path.string());
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return make_error(StatusCode::kIo, "tensor '{}': cannot open external data file '{}'", p.name(),
                      path.string());
  }
  f.seekg(offset);
  f.read(static_cast<char*>(t.raw_data()), nbytes);
  if (!f || f.gcount() != nbytes) {
    return make_error(StatusCode::kIo,
                      "tensor '{}': external data file '{}' is too short (need {} bytes at "
                      "offset {})",
                      p.name(), path.string(), nbytes, offset);
  }
  if (t.dtype() == DTypeCode::kBool) {
    // One byte per bool, any nonzero byte true (as for raw_data): stored as 0 / 1.
    auto* b = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < nbytes; ++i) b[i] = b[i] != 0 ? 1 : 0;
  }
  return Status();
}

}  // namespace

std::string_view onnx_type_name(int32_t onnx_type) {
  if (TensorProto::DataType_IsValid(onnx_type)) {
    const std::string& n =
        TensorProto::DataType_Name(static_cast<TensorProto::DataType>(onnx_type));
    return n;
  }
  return "INVALID";
}

Result<DTypeCode> dtype_from_onnx(int32_t onnx_type) {
  // One table of ONNX element types (ops::ew::dtype_from_onnx, shared with Cast); only the
  // message differs here, naming the TensorProto enum.
  Result<DTypeCode> d = ops::ew::dtype_from_onnx(onnx_type);
  if (d.is_ok()) return d;
  return invalid_argument(
      "element type {} ({}) has no frame dtype (supported: FLOAT DOUBLE FLOAT16 BFLOAT16 INT8 "
      "INT16 INT32 INT64 UINT8 UINT16 UINT32 UINT64 BOOL)",
      onnx_type_name(onnx_type), onnx_type);
}

int32_t onnx_type_from_dtype(DTypeCode d) {
  switch (d) {
    case DTypeCode::kFloat32:
      return TensorProto::FLOAT;
    case DTypeCode::kFloat64:
      return TensorProto::DOUBLE;
    case DTypeCode::kFloat16:
      return TensorProto::FLOAT16;
    case DTypeCode::kBFloat16:
      return TensorProto::BFLOAT16;
    case DTypeCode::kInt8:
      return TensorProto::INT8;
    case DTypeCode::kInt16:
      return TensorProto::INT16;
    case DTypeCode::kInt32:
      return TensorProto::INT32;
    case DTypeCode::kInt64:
      return TensorProto::INT64;
    case DTypeCode::kUInt8:
      return TensorProto::UINT8;
    case DTypeCode::kUInt16:
      return TensorProto::UINT16;
    case DTypeCode::kUInt32:
      return TensorProto::UINT32;
    case DTypeCode::kUInt64:
      return TensorProto::UINT64;
    case DTypeCode::kBool:
      return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

Result<Tensor> tensor_from_proto(const TensorProto& p, const std::string& model_dir,
                                 size_t max_bytes) {
  Result<DTypeCode> dt = dtype_from_onnx(p.data_type());
  if (!dt.is_ok()) return invalid_argument("tensor '{}': {}", p.name(), dt.status().message());
  if (p.has_segment()) {
    return unimplemented("tensor '{}': segmented tensors are not supported", p.name());
  }
  Shape shape(p.dims().begin(), p.dims().end());
  Result<size_t> nbytes = checked_nbytes(*dt, shape);
  if (!nbytes.is_ok()) {
    return invalid_argument("tensor '{}': bad dims {}: {}", p.name(), shape_to_string(shape),
                            nbytes.status().message());
  }
  if (*nbytes > max_bytes) {
    return make_error(StatusCode::kOutOfRange, "tensor '{}': {} bytes exceeds the limit of {}",
                      p.name(), *nbytes, max_bytes);
  }
  // raw_data and external data overwrite every byte: no need to zero the buffer first.
  const bool raw = p.data_location() == TensorProto::EXTERNAL || p.has_raw_data();
  FRAME_ASSIGN_OR_RETURN(Tensor t, raw ? Tensor::empty(*dt, shape) : Tensor::zeros(*dt, shape));
  if (p.data_location() == TensorProto::EXTERNAL) {
    FRAME_RETURN_IF_ERROR(read_external(p, model_dir, t));
  } else if (p.has_raw_data()) {
    if (p.raw_data().size() != *nbytes) {
      return invalid_argument("tensor '{}': raw_data has {} bytes, {}{} needs {}", p.name(),
                              p.raw_data().size(), dtype_name(*dt), shape_to_string(shape),
                              *nbytes);
    }
    // ONNX raw_data is little-endian, as is every host frame supports.
    if (*nbytes > 0) std::memcpy(t.raw_data(), p.raw_data().data(), *nbytes);
    if (*dt == DTypeCode::kBool) {
      bool* b = t.data<bool>();
      const auto* src = reinterpret_cast<const uint8_t*>(p.raw_data().data());
      for (int64_t i = 0; i < t.numel(); ++i) b[i] = src[i] != 0;
    }
  } else {
    FRAME_RETURN_IF_ERROR(fill_from_typed_fields(p, t));
  }
  return t;
}

Result<ir::AttrValue> attr_from_proto(const ::onnx::AttributeProto& a, const std::string& model_dir,
                                      size_t max_bytes) {
  using ::onnx::AttributeProto;
  AttributeProto::AttributeType type = a.type();
  // IR < 3 models may omit the discriminator: infer it from the field that is set.
  if (type == AttributeProto::UNDEFINED) {
    if (a.has_f())
      type = AttributeProto::FLOAT;
    else if (a.has_i())
      type = AttributeProto::INT;
    else if (a.has_s())
      type = AttributeProto::STRING;
    else if (a.has_t())
      type = AttributeProto::TENSOR;
    else if (a.has_g())
      type = AttributeProto::GRAPH;
    else if (a.floats_size() > 0)
      type = AttributeProto::FLOATS;
    else if (a.ints_size() > 0)
      type = AttributeProto::INTS;
    else if (a.strings_size() > 0)
      type = AttributeProto::STRINGS;
  }
  switch (type) {
    case AttributeProto::FLOAT:
      return ir::AttrValue(static_cast<double>(a.f()));
    case AttributeProto::INT:
      return ir::AttrValue(static_cast<int64_t>(a.i()));
    case AttributeProto::STRING:
      return ir::AttrValue(a.s());
    case AttributeProto::FLOATS:
      return ir::AttrValue(std::vector<double>(a.floats().begin(), a.floats().end()));
    case AttributeProto::INTS:
      return ir::AttrValue(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AttributeProto::STRINGS:
      return ir::AttrValue(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AttributeProto::TENSOR: {
      FRAME_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(a.t(), model_dir, max_bytes));
      return ir::AttrValue(std::move(t));
    }
    case AttributeProto::UNDEFINED:
      return invalid_argument("attribute '{}' has no value", a.name());
    default:
      return unimplemented("attribute '{}' has kind {}, which frame does not support", a.name(),
                           AttributeProto::AttributeType_Name(type));
  }
}

}  // namespace frame::onnx::detail
