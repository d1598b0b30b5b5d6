// TensorProto / AttributeProto -> frame Tensor / AttrValue (ONNX IR spec, "Tensor" and
// "Attributes"; external data per onnx/docs/ExternalData.md).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

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

// The typed field that carries values of `dt` and how many values it holds.
struct TypedField {
  std::string_view name;
  int64_t count = 0;
};

TypedField typed_field_of(const TensorProto& p, DTypeCode dt) {
  switch (dt) {
    case DTypeCode::kFloat32:
      return {"float_data", p.float_data_size()};
    case DTypeCode::kFloat64:
      return {"double_data", p.double_data_size()};
    case DTypeCode::kInt64:
      return {"int64_data", p.int64_data_size()};
    case DTypeCode::kUInt32:
    case DTypeCode::kUInt64:
      return {"uint64_data", p.uint64_data_size()};
    default:
      return {"int32_data", p.int32_data_size()};
  }
}

// Copies the typed field into `t`, whose element count the caller checked against
// typed_field_of (before allocating `t`): every element is written.
Status fill_from_typed_fields(const TensorProto& p, Tensor& t) {
  switch (t.dtype()) {
    case DTypeCode::kFloat32:
      copy_cast<float>(p.float_data(), t);
      return Status();
    case DTypeCode::kFloat64:
      copy_cast<double>(p.double_data(), t);
      return Status();
    case DTypeCode::kInt64:
      copy_cast<int64_t>(p.int64_data(), t);
      return Status();
    case DTypeCode::kFloat16:
    case DTypeCode::kBFloat16: {
      auto* dst = static_cast<uint16_t*>(t.raw_data());
      for (int i = 0; i < p.int32_data_size(); ++i) {
        dst[i] = static_cast<uint16_t>(p.int32_data(i));
      }
      return Status();
    }
    case DTypeCode::kInt32:
      copy_cast<int32_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kInt16:
      copy_cast<int16_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kInt8:
      copy_cast<int8_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kUInt8:
      copy_cast<uint8_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kUInt16:
      copy_cast<uint16_t>(p.int32_data(), t);
      return Status();
    case DTypeCode::kUInt32:
      copy_cast<uint32_t>(p.uint64_data(), t);
      return Status();
    case DTypeCode::kUInt64:
      copy_cast<uint64_t>(p.uint64_data(), t);
      return Status();
    case DTypeCode::kBool: {
      bool* dst = t.data<bool>();
      for (int i = 0; i < p.int32_data_size(); ++i) dst[i] = p.int32_data(i) != 0;
      return Status();
    }
  }
  return internal_error("unhandled dtype");
}

// A decimal offset or length key: digits only (no sign, no trailing text), within int64 (a
// value past it is called out of range, not malformed).
Result<int64_t> parse_size_key(const ::onnx::StringStringEntryProto& kv,
                               const std::string& tensor) {
  int64_t v = -1;
  const std::string& text = kv.value();
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range && text[0] != '-' && end == text.data() + text.size()) {
    return invalid_argument(
        "tensor '{}': external data key '{}' has value '{}', out of range (more than 2^63 - 1)",
        tensor, kv.key(), text);
  }
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return invalid_argument(
        "tensor '{}': external data key '{}' has value '{}', not a non-negative integer", tensor,
        kv.key(), text);
  }
  return v;
}

// True when `p` is `root` or lies under it (both canonical: no ".", "..", or links).
bool inside(const std::filesystem::path& root, const std::filesystem::path& p) {
  auto r = root.begin();
  auto q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

}  // namespace

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(data_, size_);
}

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path, size_t max_bytes,
                                                     bool no_follow,
                                                     std::string_view too_big_hint) {
  // O_NONBLOCK: opening a FIFO with no writer must not block; fstat then refuses it.
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (no_follow ? O_NOFOLLOW : 0);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    return make_error(StatusCode::kIo, "cannot open '{}': {}", path, std::strerror(errno));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(StatusCode::kIo, "cannot open '{}': not a readable file", path);
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return make_error(StatusCode::kIo, "'{}' is {} bytes, over the limit of {}{}", path, size,
                      max_bytes, too_big_hint);
  }
  auto f = std::make_unique<MappedFile>();
  if (size == 0) return f;  // an empty file is an empty (invalid) model, reported by the parser
  f->size_ = static_cast<size_t>(size);
  void* p = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) {
    f->data_ = p;
    return f;
  }
  // File systems that refuse mappings (some FUSE mounts): read the file instead.
  f->copy_.resize(f->size_);
  size_t done = 0;
  while (done < f->size_) {
    const ssize_t n = pread(fd, f->copy_.data() + done, f->size_ - done, static_cast<off_t>(done));
    if (n <= 0) return make_error(StatusCode::kIo, "cannot read '{}'", path);
    done += static_cast<size_t>(n);
  }
  return f;
}

// Resolves an external-data location to a canonical path inside the canonical model directory.
// Every check on the text comes first, then the resolution (symbolic links anywhere in the
// path, including a linked directory, are followed before the containment test), and only a
// path that passes is ever opened: no byte of a file outside the directory is read.
Result<std::string> ExternalData::resolve(const std::string& location, const std::string& tensor) {
  namespace fs = std::filesystem;
  if (dir_.empty()) {
    return invalid_argument("tensor '{}': external data '{}' but the model directory is unknown",
                            tensor, location);
  }
  if (location.empty()) {
    return invalid_argument("tensor '{}': external data location is empty", tensor);
  }
  if (location.find('\0') != std::string::npos) {
    return invalid_argument("tensor '{}': external data location '{}' contains a NUL byte", tensor,
                            location.substr(0, location.find('\0')));
  }
  if (location.find('\\') != std::string::npos ||
      (location.size() >= 2 && std::isalpha(static_cast<unsigned char>(location[0])) != 0 &&
       location[1] == ':')) {
    return invalid_argument(
        "tensor '{}': external data location '{}' is a Windows-style path (backslash or drive "
        "letter); locations are relative paths with '/' separators",
        tensor, location);
  }
  const fs::path rel(location);
  if (rel.is_absolute()) {
    return invalid_argument("tensor '{}': external data location '{}' must be a relative path",
                            tensor, location);
  }
  for (const auto& part : rel) {
    if (part == "..") {
      return invalid_argument("tensor '{}': external data location '{}' leaves the model directory",
                              tensor, location);
    }
  }
  std::error_code ec;
  if (root_.empty()) {
    const fs::path root = fs::canonical(dir_, ec);
    if (ec) {
      return make_error(StatusCode::kIo, "tensor '{}': cannot resolve the model directory '{}': {}",
                        tensor, dir_, ec.message());
    }
    root_ = root.string();
  }
  const fs::path target = fs::canonical(fs::path(root_) / rel, ec);
  if (ec) {
    return make_error(StatusCode::kIo, "tensor '{}': cannot open external data file '{}': {}",
                      tensor, (fs::path(dir_) / rel).string(), ec.message());
  }
  if (!inside(fs::path(root_), target)) {
    return invalid_argument(
        "tensor '{}': external data location '{}' resolves to '{}', outside the model directory "
        "'{}' (symbolic links are followed before the check)",
        tensor, location, target.string(), root_);
  }
  return target.string();
}

Result<std::string_view> ExternalData::read(const TensorProto& p, size_t nbytes) {
  std::string location;
  std::optional<int64_t> offset;
  std::optional<int64_t> length;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      FRAME_ASSIGN_OR_RETURN(offset, parse_size_key(kv, p.name()));
    } else if (kv.key() == "length") {
      FRAME_ASSIGN_OR_RETURN(length, parse_size_key(kv, p.name()));
    }
  }
  if (length && static_cast<uint64_t>(*length) != nbytes) {
    return invalid_argument(
        "tensor '{}': external data length {} is not the tensor's size ({} bytes)", p.name(),
        *length, nbytes);
  }
  FRAME_ASSIGN_OR_RETURN(std::string path, resolve(location, p.name()));
  auto it = files_.find(path);
  if (it == files_.end()) {
    // The resolved path has no links left; O_NOFOLLOW refuses one swapped in since.
    Result<std::unique_ptr<MappedFile>> f = MappedFile::open(path, SIZE_MAX, /*no_follow=*/true);
    if (!f.is_ok())
      return f.status().with_prefix(fmt::format("tensor '{}': external data: ", p.name()));
    it = files_.emplace(path, std::move(*f)).first;
  }
  const std::string_view file = it->second->bytes();
  const uint64_t off = static_cast<uint64_t>(offset.value_or(0));
  if (off > file.size() || nbytes > file.size() - off) {
    return invalid_argument(
        "tensor '{}': external data needs {} bytes at offset {} of '{}', which has {} bytes",
        p.name(), nbytes, off, location, file.size());
  }
  return file.substr(static_cast<size_t>(off), nbytes);
}

namespace {}  // namespace

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

Result<Tensor> tensor_from_proto(const TensorProto& p, ExternalData& external, size_t max_bytes) {
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
  // raw_data and external data overwrite every byte: no need to zero the buffer first. The
  // source is validated before the buffer is allocated.
  std::optional<std::string_view> bytes;
  if (p.data_location() == TensorProto::EXTERNAL) {
    FRAME_ASSIGN_OR_RETURN(bytes, external.read(p, *nbytes));
  } else if (p.has_raw_data()) {
    if (p.raw_data().size() != *nbytes) {
      return invalid_argument("tensor '{}': raw_data has {} bytes, {}{} needs {}", p.name(),
                              p.raw_data().size(), dtype_name(*dt), shape_to_string(shape),
                              *nbytes);
    }
    bytes = p.raw_data();
  } else {
    // A typed field must hold one value per element; checked before the buffer is allocated
    // so a few values cannot make the loader allocate and fill gigabytes first.
    const TypedField field = typed_field_of(p, *dt);
    const int64_t n = numel_of(shape);
    if (field.count != n) {
      return invalid_argument("tensor '{}': {} has {} values, shape {} needs {}", p.name(),
                              field.name, field.count, shape_to_string(shape), n);
    }
  }
  // Every element is written below (bytes or typed field): no need to zero the buffer.
  FRAME_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(*dt, shape));
  if (bytes) {
    // ONNX raw and external data are little-endian, as is every host frame supports.
    if (*nbytes > 0) std::memcpy(t.raw_data(), bytes->data(), *nbytes);
    if (*dt == DTypeCode::kBool) {
      // One byte per bool, any nonzero byte true: stored as 0 / 1.
      bool* b = t.data<bool>();
      const auto* src = reinterpret_cast<const uint8_t*>(bytes->data());
      for (int64_t i = 0; i < t.numel(); ++i) b[i] = src[i] != 0;
    }
  } else {
    FRAME_RETURN_IF_ERROR(fill_from_typed_fields(p, t));
  }
  return t;
}

Result<ir::AttrValue> attr_from_proto(const ::onnx::AttributeProto& a, ExternalData& external,
                                      const LoadLimits& limits) {
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
  const size_t elements =
      std::max({static_cast<size_t>(a.ints_size()), static_cast<size_t>(a.floats_size()),
                static_cast<size_t>(a.strings_size()), a.s().size()});
  if (elements > limits.max_attribute_elements) {
    return invalid_argument(
        "attribute '{}' has {} elements, over the limit of {} "
        "(max_attribute_elements)",
        a.name(), elements, limits.max_attribute_elements);
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
      FRAME_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(a.t(), external, limits.max_tensor_bytes));
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
