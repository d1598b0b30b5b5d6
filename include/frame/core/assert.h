#pragma once
/// \file
/// FRAME_ASSERT: internal invariants (a bug in frame, never bad user input, which gets a
/// Status). Active in all build types; prints file:line and the condition, then aborts.

namespace frame::detail {
[[noreturn]] void assert_fail(const char* cond, const char* file, int line, const char* msg);
}  // namespace frame::detail

#define FRAME_ASSERT(cond, msg)                                                \
  do {                                                                         \
    if (!(cond)) ::frame::detail::assert_fail(#cond, __FILE__, __LINE__, msg); \
  } while (0)
