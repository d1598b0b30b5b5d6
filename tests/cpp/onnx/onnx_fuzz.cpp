// Fuzz entry point of the ONNX loader (libFuzzer signature) plus a deterministic gtest driver.
// With clang, compiling this file with -fsanitize=fuzzer -DFRAME_LIBFUZZER and linking
// libframe gives a libFuzzer binary over the loader (docs/onnx.md "Robustness").
// Without it, the gtest below mutates the bundled model with a fixed seed.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <string_view>

#include "frame/onnx/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  frame::onnx::LoadOptions o;
  o.max_tensor_bytes = size_t{64} << 20;  // keep single allocations small under the fuzzer
  (void)frame::onnx::load_from_bytes(std::string_view(reinterpret_cast<const char*>(data), size),
                                     o);
  return 0;
}

#ifndef FRAME_LIBFUZZER
#include <gtest/gtest.h>

namespace {

std::string source_dir() {
  const char* env = std::getenv("FRAME_SOURCE_DIR");
  return env != nullptr ? env : FRAME_SOURCE_DIR;
}

// Byte flips, truncations, insertions and duplicated spans of a valid model reach deep into
// the parser (nested messages, tensor sizes, attribute kinds) far more often than random
// bytes do.
TEST(OnnxFuzz, MutatedBundledModelNeverCrashes) {
  std::ifstream f(source_dir() + "/models/small_cnn.onnx", std::ios::binary);
  const std::string seed_model(std::istreambuf_iterator<char>(f), {});
  ASSERT_FALSE(seed_model.empty());
  std::mt19937_64 rng(20240611);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string b = seed_model;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !b.empty(); ++e) {
      const size_t pos = rng() % b.size();
      switch (rng() % 4) {
        case 0:
          b[pos] = static_cast<char>(rng());
          break;
        case 1:
          b.resize(pos);
          break;
        case 2:
          b.insert(pos, 1, static_cast<char>(rng()));
          break;
        default: {
          const size_t len = std::min<size_t>(rng() % 64, b.size() - pos);
          b.insert(rng() % b.size(), b.substr(pos, len));
        }
      }
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  }
}

}  // namespace
#endif
