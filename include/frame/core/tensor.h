#pragma once
/// \file
/// `Tensor`: a dtype, a shape and dense row-major (C-order) storage that is either owned
/// (64-byte aligned, shared by copies) or a borrowed view of caller memory.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"

namespace frame {

namespace detail {
[[noreturn]] void detail_abort_from_vector();
}

/// Dimensions, outermost first. A rank-0 shape `{}` is a scalar with one element.
using Shape = std::vector<int64_t>;

/// Alignment of owned tensor storage and arena buffers, in bytes.
inline constexpr size_t kTensorAlignment = 64;

/// Product of dims. Errors: kInvalidArgument for a negative dim, kOutOfRange on int64 overflow.
Result<int64_t> checked_numel(std::span<const int64_t> shape);
/// numel * dtype_size. Errors: as checked_numel, plus kOutOfRange when bytes overflow.
Result<size_t> checked_nbytes(DTypeCode dtype, std::span<const int64_t> shape);
/// Product of dims without checks (shape must have been validated).
int64_t numel_of(std::span<const int64_t> shape);
/// "[2,3,4]"
std::string shape_to_string(std::span<const int64_t> shape);
/// Row-major strides in elements, e.g. {2,3,4} -> {12,4,1}.
std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape);
/// numpy broadcasting of two shapes (ONNX "Broadcasting in ONNX", multidirectional).
/// Errors: kInvalidArgument naming both shapes and the mismatching dim.
Result<Shape> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b);

/// Dense tensor. Copying a Tensor shares its storage (like a shared_ptr); `clone()` copies.
/// Thread-safety: distinct Tensors may be used from different threads; concurrent writes to
/// shared storage are the caller's business.
class Tensor {
 public:
  /// An empty float32 scalar placeholder with no storage (`defined()` is false).
  Tensor() = default;

  /// Allocates owned, 64-byte aligned, zero-filled storage.
  /// Errors: negative dim or size overflow (see checked_nbytes); kResourceExhausted-like
  /// allocation failure is reported as kOutOfRange.
  static Result<Tensor> zeros(DTypeCode dtype, Shape shape);
  /// Allocates owned storage without initialising it (same errors as zeros).
  static Result<Tensor> empty(DTypeCode dtype, Shape shape);
  /// Borrows `data` (not owned; must outlive every use of the view). Shape must be valid.
  static Result<Tensor> view(DTypeCode dtype, Shape shape, void* data);
  /// Owned tensor sharing ownership with `keep_alive` (e.g. an arena or a numpy array).
  static Tensor wrap(DTypeCode dtype, Shape shape, void* data, std::shared_ptr<void> keep_alive);
  /// Builds a tensor from values of type T (dtype kDTypeOf<T>). Aborts if shape and
  /// values.size() disagree (programmer error, used by tests and constant builders).
  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  /// A rank-0 tensor holding `v`.
  template <typename T>
  static Tensor scalar(T v) {
    return from_vector<T>({}, std::vector<T>{v});
  }

  bool defined() const { return data_ != nullptr || numel_ == 0; }
  DTypeCode dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool owns_storage() const { return storage_ != nullptr; }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  /// Deep copy into new owned storage.
  Tensor clone() const;
  /// Same storage, new shape with the same element count. Errors: kInvalidArgument.
  Result<Tensor> reshaped(Shape shape) const;
  /// Element i converted to double (any dtype; for tests, printing and shape values).
  double element_as_double(int64_t i) const;
  /// Element i converted to int64 (truncating floats).
  int64_t element_as_int64(int64_t i) const;
  /// All elements as int64 (for shape-like tensors: reshape shape, slice starts, ...).
  std::vector<int64_t> to_int64_vector() const;
  /// Byte-wise equality of dtype, shape and contents.
  bool bitwise_equal(const Tensor& other) const;

 private:
  DTypeCode dtype_ = DTypeCode::kFloat32;
  Shape shape_;
  int64_t numel_ = 1;
  void* data_ = nullptr;
  std::shared_ptr<void> storage_;
};

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Result<Tensor> t = empty(kDTypeOf<T>, std::move(shape));
  if (!t.is_ok() || static_cast<size_t>(t->numel()) != values.size()) {
    detail::detail_abort_from_vector();
  }
  T* dst = t->template data<T>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
  return std::move(t).value();
}

}  // namespace frame
