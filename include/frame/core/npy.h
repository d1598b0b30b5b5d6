#pragma once
/// \file
/// NumPy `.npy` file I/O (format version 1.0/2.0, C order, little-endian) for the CLI, tests
/// and the op test database. bfloat16 has no numpy dtype: it is stored as `<u2` raw bits and
/// read back with `as_dtype = kBFloat16`.

#include <optional>
#include <string>
#include <string_view>

#include "frame/core/status.h"
#include "frame/core/tensor.h"

namespace frame {

/// Reads an .npy file. Supported descr: <f4 <f8 <f2 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1.
/// `as_dtype` reinterprets same-size storage (<u2 is uint16 unless `as_dtype` is kBFloat16).
/// Errors: kIo (missing file, truncated data), kUnimplemented (other dtypes); Fortran-order
/// arrays are read into row-major order.
Result<Tensor> read_npy(const std::string& path, std::optional<DTypeCode> as_dtype = {});
/// Like `read_npy`, from the bytes of an .npy file held in memory (errors name "<npy bytes>").
/// Both check the shape's byte size against the data present before allocating (kIo when
/// the data is shorter, kOutOfRange when the shape's byte size overflows).
Result<Tensor> read_npy_bytes(std::string_view bytes, std::optional<DTypeCode> as_dtype = {});
/// Writes `t` as .npy (bf16 as <u2). Errors: kIo.
Status write_npy(const std::string& path, const Tensor& t);

}  // namespace frame
