#pragma once
/// \file
/// Error handling for the whole library: `Status` and `Result<T>`.
/// Library code never throws across the C++ API; every fallible call returns one of these
/// (docs/standards/design.md "Quality rules"). Only registration faults abort (ARCH-040).

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace frame {

/// Error category. Python bindings map these to exception types
/// (docs/architecture/op-registration.md, errors).
enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     ///< bad input from the caller (shape, dtype, attr, model content)
  kNotFound,            ///< a named thing (op, kernel, value, file) does not exist
  kAlreadyExists,       ///< a unique name is taken
  kUnimplemented,       ///< valid request the engine cannot serve (unsupported op/dtype)
  kOutOfRange,          ///< index or size past a limit (overflowing dims, bad axis)
  kFailedPrecondition,  ///< the object is not in the state the call needs (unverified graph)
  kInternal,            ///< a bug in frame
  kIo,                  ///< file system or parse failure of external data
};

/// Stable lower-case name of a status code, e.g. "invalid_argument".
std::string_view status_code_name(StatusCode code);

/// Outcome of an operation: OK, or an error code with an English message that names
/// what is wrong and where (node, op, input index, expected vs actual).
class [[nodiscard]] Status {
 public:
  /// An OK status.
  Status() = default;
  /// An error status. `code` must not be kOk.
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "invalid_argument: <message>", or "ok".
  std::string to_string() const;
  /// Returns a copy whose message is `prefix + message()`; keeps the code.
  Status with_prefix(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// Builds an error Status with an fmt-formatted message.
template <typename... Args>
Status make_error(StatusCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status invalid_argument(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status not_found(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status unimplemented(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnimplemented, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status internal_error(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
}

/// A value of type T or an error Status (never an OK status without a value).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)
  template <typename U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Status> &&
           !std::is_same_v<std::decay_t<U>, T>) Result(U&& u)
      : v_(T(std::forward<U>(u))) {}  // NOLINT(google-explicit-constructor)

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  /// The error; an OK Status when a value is held.
  Status status() const { return is_ok() ? Status() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace frame

#define FRAME_CONCAT_IMPL(a, b) a##b
#define FRAME_CONCAT(a, b) FRAME_CONCAT_IMPL(a, b)

/// Returns the Status of `expr` from the enclosing function if it is an error.
#define FRAME_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::frame::Status frame_status_ = (expr);           \
    if (!frame_status_.is_ok()) return frame_status_; \
  } while (0)

/// `FRAME_ASSIGN_OR_RETURN(auto x, make())`: binds the value or returns the error.
#define FRAME_ASSIGN_OR_RETURN(lhs, expr) \
  FRAME_ASSIGN_OR_RETURN_IMPL(FRAME_CONCAT(frame_result_, __LINE__), lhs, expr)
#define FRAME_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
