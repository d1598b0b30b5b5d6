// libFuzzer target: read_npy_bytes on arbitrary bytes (docs/fuzzing.md), plain and as
// bfloat16. A header may declare any shape; the reader must refuse one larger than the data
// before allocating.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frame/core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)frame::read_npy_bytes(bytes);
  (void)frame::read_npy_bytes(bytes, frame::DTypeCode::kBFloat16);
  return 0;
}
