#include "frame/core/tensor.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "core/aligned_memory.h"

namespace frame {

namespace detail {
void detail_abort_from_vector() {
  std::fprintf(stderr, "frame: Tensor::from_vector: shape and value count disagree\n");
  std::abort();
}
}  // namespace detail

Result<int64_t> checked_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d < 0) {
      return invalid_argument("shape {} has negative dim {} at axis {}", shape_to_string(shape), d,
                              i);
    }
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return make_error(StatusCode::kOutOfRange, "shape {} has more than 2^63-1 elements",
                        shape_to_string(shape));
    }
    n *= d;
  }
  return n;
}

Result<size_t> checked_nbytes(DTypeCode dtype, std::span<const int64_t> shape) {
  FRAME_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape));
  auto es = static_cast<int64_t>(dtype_size(dtype));
  // Keep byte sizes below 2^62 so offsets and alignment arithmetic cannot overflow.
  if (n > (int64_t{1} << 62) / es) {
    return make_error(StatusCode::kOutOfRange, "tensor {}{} needs more than 2^62 bytes",
                      dtype_name(dtype), shape_to_string(shape));
  }
  return static_cast<size_t>(n * es);
}

int64_t numel_of(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

Result<Shape> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return invalid_argument("shapes {} and {} do not broadcast: dim {} of the result is {} vs {}",
                              shape_to_string(a), shape_to_string(b), i, da, db);
    }
  }
  FRAME_RETURN_IF_ERROR(checked_numel(out).status());
  return out;
}

namespace {
std::shared_ptr<void> allocate(size_t nbytes) {
  size_t rounded = (nbytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  void* p = detail::allocate_aligned(rounded, kTensorAlignment);
  if (p == nullptr) return nullptr;
  return std::shared_ptr<void>(p, [rounded](void* q) { detail::free_aligned(q, rounded); });
}
}  // namespace

Result<Tensor> Tensor::empty(DTypeCode dtype, Shape shape) {
  FRAME_ASSIGN_OR_RETURN(size_t nbytes, checked_nbytes(dtype, shape));
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = numel_of(shape);
  t.shape_ = std::move(shape);
  t.storage_ = allocate(nbytes);
  if (t.storage_ == nullptr) {
    return make_error(StatusCode::kOutOfRange, "cannot allocate {} bytes for tensor {}{}", nbytes,
                      dtype_name(dtype), shape_to_string(t.shape_));
  }
  t.data_ = t.storage_.get();
  return t;
}

Result<Tensor> Tensor::zeros(DTypeCode dtype, Shape shape) {
  FRAME_ASSIGN_OR_RETURN(Tensor t, empty(dtype, std::move(shape)));
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Result<Tensor> Tensor::view(DTypeCode dtype, Shape shape, void* data) {
  FRAME_RETURN_IF_ERROR(checked_nbytes(dtype, shape).status());
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = numel_of(shape);
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::wrap(DTypeCode dtype, Shape shape, void* data, std::shared_ptr<void> keep_alive) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = numel_of(shape);
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.storage_ = std::move(keep_alive);
  return t;
}

Tensor Tensor::clone() const {
  Result<Tensor> t = empty(dtype_, shape_);
  if (!t.is_ok()) detail::detail_abort_from_vector();
  if (nbytes() > 0) std::memcpy(t->data_, data_, nbytes());
  return std::move(t).value();
}

Result<Tensor> Tensor::reshaped(Shape shape) const {
  FRAME_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape));
  if (n != numel_) {
    return invalid_argument("cannot reshape {} elements {} to {}", numel_, shape_to_string(shape_),
                            shape_to_string(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::element_as_double(int64_t i) const {
  double v = 0;
  (void)dispatch_dtype(dtype_,
                       [&]<typename T>() { v = static_cast<double>(to_compute(data<T>()[i])); });
  return v;
}

int64_t Tensor::element_as_int64(int64_t i) const {
  int64_t v = 0;
  (void)dispatch_dtype(dtype_,
                       [&]<typename T>() { v = static_cast<int64_t>(to_compute(data<T>()[i])); });
  return v;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  (void)dispatch_dtype(dtype_, [&]<typename T>() {
    const T* p = data<T>();
    for (int64_t i = 0; i < numel_; ++i) out[i] = static_cast<int64_t>(to_compute(p[i]));
  });
  return out;
}

bool Tensor::bitwise_equal(const Tensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  return nbytes() == 0 || std::memcmp(data_, o.data_, nbytes()) == 0;
}

}  // namespace frame
