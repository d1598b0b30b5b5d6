#pragma once
/// \file
/// Inputs shared by the robustness tests.

#include <cmath>
#include <cstdint>
#include <vector>

#include "frame/core/tensor.h"

namespace frame::test {

/// Deterministic f32 values in about [-2, 2] (times `scale`), different per `seed`.
inline Tensor grid(const Shape& s, int seed, float scale = 1.0F) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] =
        scale * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + seed) *
                                   (1.5 + 0.5 * std::cos(seed)));
  }
  return Tensor::from_vector<float>(s, v);
}

}  // namespace frame::test
