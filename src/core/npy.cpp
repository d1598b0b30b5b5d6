#include "frame/core/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

namespace frame {

namespace {

struct DescrEntry {
  const char* descr;
  DTypeCode dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"<f4", DTypeCode::kFloat32},
    {"<f8", DTypeCode::kFloat64},
    {"<f2", DTypeCode::kFloat16},
    {"|i1", DTypeCode::kInt8},
    {"<i2", DTypeCode::kInt16},
    {"<i4", DTypeCode::kInt32},
    {"<i8", DTypeCode::kInt64},
    {"|u1", DTypeCode::kUInt8},
    {"|b1", DTypeCode::kBool},
    {"<u2", DTypeCode::kUInt16},
    {"<u4", DTypeCode::kUInt32},
    {"<u8", DTypeCode::kUInt64},
    // numpy has no bfloat16: bf16 is written as <u2 and read back only when asked (as_dtype).
    {"<u2", DTypeCode::kBFloat16},
};

// Value of `'key': <value>` in the header dict, up to the next ',' or '}' at depth 0.
std::string header_field(const std::string& h, const std::string& key) {
  size_t p = h.find("'" + key + "'");
  if (p == std::string::npos) return "";
  p = h.find(':', p);
  if (p == std::string::npos) return "";
  ++p;
  int depth = 0;
  size_t q = p;
  for (; q < h.size(); ++q) {
    char c = h[q];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string v = h.substr(p, q - p + (h[q] == ')' ? 1 : 0));
  size_t a = v.find_first_not_of(" '"), b = v.find_last_not_of(" '");
  return a == std::string::npos ? "" : v.substr(a, b - a + 1);
}

// A Fortran-order (column-major) array's bytes, read into `f`, rearranged into a row-major
// tensor of the same shape: dim d of the file advances by the product of the dims before it.
Result<Tensor> fortran_to_c(const Tensor& f) {
  FRAME_ASSIGN_OR_RETURN(Tensor c, Tensor::empty(f.dtype(), f.shape()));
  const Shape& shape = f.shape();
  const size_t rank = shape.size();
  const size_t esize = dtype_size(f.dtype());
  std::vector<int64_t> fstride(rank, 1);
  for (size_t d = 1; d < rank; ++d) fstride[d] = fstride[d - 1] * shape[d - 1];
  std::vector<int64_t> idx(rank, 0);
  const auto* src = static_cast<const std::byte*>(f.raw_data());
  auto* dst = static_cast<std::byte*>(c.raw_data());
  const int64_t n = f.numel();
  int64_t off = 0;  // source element offset of idx
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + static_cast<size_t>(i) * esize, src + static_cast<size_t>(off) * esize,
                esize);
    for (size_t d = rank; d-- > 0;) {  // row-major odometer over the destination
      if (++idx[d] < shape[d]) {
        off += fstride[d];
        break;
      }
      off -= fstride[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
  return c;
}

// Reads one .npy image from `f` (positioned at its start); `name` names it in errors. The
// declared data size is checked against the bytes the stream holds before anything is
// allocated, so a header claiming a huge shape is an error, not an allocation.
Result<Tensor> read_npy_stream(std::istream& f, const std::string& name,
                               std::optional<DTypeCode> as_dtype) {
  f.seekg(0, std::ios::end);
  const std::streamoff total = f.tellg();
  f.seekg(0, std::ios::beg);
  if (!f || total < 0) return make_error(StatusCode::kIo, "cannot read '{}'", name);
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    return make_error(StatusCode::kIo, "'{}' is not an .npy file (bad magic)", name);
  }
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2))
      return make_error(StatusCode::kIo, "'{}': truncated header", name);
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4))
      return make_error(StatusCode::kIo, "'{}': truncated header", name);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  if (hlen > (1u << 20)) return make_error(StatusCode::kIo, "'{}': header too large", name);
  std::string h(hlen, '\0');
  if (!f.read(h.data(), hlen)) return make_error(StatusCode::kIo, "'{}': truncated header", name);
  std::string descr = header_field(h, "descr");
  std::string fortran = header_field(h, "fortran_order");
  std::string shape_s = header_field(h, "shape");
  std::optional<DTypeCode> dt;
  for (const auto& e : kDescrs) {
    if (descr == e.descr) {
      dt = e.dtype;  // the first entry: <u2 is uint16 unless as_dtype says bf16
      break;
    }
  }
  if (!dt) return unimplemented("'{}': unsupported npy dtype '{}'", name, descr);
  if (as_dtype && dtype_size(*as_dtype) == dtype_size(*dt)) dt = *as_dtype;
  Shape shape;
  bool in_dim = false;
  for (char c : shape_s) {
    if (c >= '0' && c <= '9') {
      if (!in_dim) shape.push_back(0);
      in_dim = true;
      int64_t& d = shape.back();
      if (d > (INT64_MAX - 9) / 10) {
        return make_error(StatusCode::kIo, "'{}': dim in shape '{}' overflows int64", name,
                          shape_s);
      }
      d = d * 10 + (c - '0');
    } else {
      in_dim = false;
    }
  }
  FRAME_ASSIGN_OR_RETURN(size_t nbytes, checked_nbytes(*dt, shape));
  const auto data_start = static_cast<std::streamoff>(f.tellg());
  if (static_cast<uint64_t>(total - data_start) < nbytes) {
    return make_error(StatusCode::kIo, "'{}': truncated data (expected {} bytes, found {})", name,
                      nbytes, total - data_start);
  }
  FRAME_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(*dt, shape));
  if (t.nbytes() > 0 &&
      !f.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()))) {
    return make_error(StatusCode::kIo, "'{}': truncated data (expected {} bytes)", name,
                      t.nbytes());
  }
  if (fortran == "True" && t.rank() > 1) return fortran_to_c(t);
  return t;
}

}  // namespace

Result<Tensor> read_npy(const std::string& path, std::optional<DTypeCode> as_dtype) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(StatusCode::kIo, "cannot open '{}'", path);
  return read_npy_stream(f, path, as_dtype);
}

Result<Tensor> read_npy_bytes(std::string_view bytes, std::optional<DTypeCode> as_dtype) {
  std::istringstream f(std::string(bytes), std::ios::binary);
  return read_npy_stream(f, "<npy bytes>", as_dtype);
}

Status write_npy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  for (const auto& e : kDescrs) {
    if (e.dtype == t.dtype()) descr = e.descr;
  }
  std::ostringstream hs;
  hs << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i)
    hs << t.shape()[i] << (t.rank() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
  hs << "), }";
  std::string h = hs.str();
  // Format 1.0 stores the header length in 2 bytes; a longer header (very high rank) needs
  // format 2.0 with 4 bytes. The data starts on a 64-byte boundary in both.
  const bool v2 = 10 + h.size() + 64 > 0xffff;
  const size_t prefix = v2 ? 12 : 10;
  h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) return make_error(StatusCode::kIo, "cannot write '{}'", path);
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', static_cast<char>(v2 ? 2 : 1), 0};
  f.write(magic, 8);
  const auto hl = static_cast<uint32_t>(h.size());
  const char b[4] = {static_cast<char>(hl & 0xff), static_cast<char>((hl >> 8) & 0xff),
                     static_cast<char>((hl >> 16) & 0xff), static_cast<char>(hl >> 24)};
  f.write(b, v2 ? 4 : 2);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  if (t.nbytes() > 0)
    f.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
  f.close();  // buffered bytes reach the file (or fail, e.g. a full disk) only here
  if (!f) return make_error(StatusCode::kIo, "write to '{}' failed", path);
  return Status();
}

}  // namespace frame
