#include "frame/core/status.h"

#include <cstdio>
#include <cstdlib>

#include "frame/core/assert.h"

namespace frame {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kUnimplemented:
      return "unimplemented";
    case StatusCode::kOutOfRange:
      return "out_of_range";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kIo:
      return "io";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return fmt::format("{}: {}", status_code_name(code_), message_);
}

Status Status::with_prefix(std::string_view prefix) const {
  if (is_ok()) return *this;
  return Status(code_, std::string(prefix) + message_);
}

namespace detail {
void assert_fail(const char* cond, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "frame: internal error at %s:%d: assertion '%s' failed: %s\n", file, line,
               cond, msg);
  std::abort();
}
}  // namespace detail

}  // namespace frame
