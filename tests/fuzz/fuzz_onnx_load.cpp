// libFuzzer target: onnx::load_from_bytes on arbitrary bytes (docs/fuzzing.md). Any input must
// give a graph or an error Status: never a crash, a hang or an unbounded allocation. The same
// bytes also go through the analysis load (`keep_untyped`, as `frame inspect` uses it).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frame/onnx/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  frame::onnx::LoadOptions options;
  options.max_tensor_bytes = size_t{1} << 20;  // the fuzzer's memory, not a frame limit
  (void)frame::onnx::load_from_bytes(bytes, options);
  options.keep_untyped = true;
  options.verify = false;
  (void)frame::onnx::load_from_bytes(bytes, options);
  return 0;
}
