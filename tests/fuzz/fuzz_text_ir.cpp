// libFuzzer target: ir::parse_text on arbitrary text (docs/fuzzing.md). A parsed graph is
// printed and parsed again: print_text must accept whatever the parser accepted, and the
// printed form must parse (the round trip documented in include/frame/ir/text.h).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "frame/ir/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t{1} << 16)) return 0;  // larger texts only repeat the same paths slower
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  frame::Result<frame::ir::Graph> g = frame::ir::parse_text(text);
  if (!g.is_ok()) return 0;
  const std::string printed = frame::ir::print_text(*g);
  frame::Result<frame::ir::Graph> again = frame::ir::parse_text(printed);
  if (!again.is_ok()) {
    std::fprintf(stderr, "printed text does not parse: %s\n--- printed:\n%s\n",
                 again.status().to_string().c_str(), printed.c_str());
    std::abort();
  }
  return 0;
}
