#pragma once
/// \file
/// One guard around every call into a kernel's prepare or run step (compiled plans' KernelPart
/// and the interpreted tier): kernels may come from plugins, and an exception must not cross
/// frame's API (docs/security.md). Private to src/runtime.

#include <exception>
#include <new>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "frame/core/status.h"
#include "frame/ops/kernel_registry.h"

namespace frame::runtime::detail {

/// Calls `f` (returning Status), the `step` ("prepare" or "run") of kernel `k` for node `ctx`,
/// and turns what it throws into an error naming the node: std::bad_alloc and
/// std::length_error as kOutOfRange ("node 'n' (op): kernel run could not allocate its scratch
/// memory"), any other exception as kInternal with its what() ("... kernel op@backend threw an
/// exception: what", "... threw an exception in prepare: what").
template <typename F>
Status guard_kernel_call(const ops::KernelDef& k, const ops::NodeContext& ctx,
                         std::string_view step, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  } catch (const std::exception& e) {
    return internal_error("node '{}' ({}): kernel {}@{} threw an exception{}: {}", ctx.node_name,
                          ctx.op, k.op, k.backend, step == "run" ? "" : " in prepare", e.what());
  } catch (...) {
    return internal_error("node '{}' ({}): kernel {}@{} threw an exception{}", ctx.node_name,
                          ctx.op, k.op, k.backend, step == "run" ? "" : " in prepare");
  }
  return make_error(StatusCode::kOutOfRange,
                    "node '{}' ({}): kernel {} could not allocate its scratch memory",
                    ctx.node_name, ctx.op, step);
}

}  // namespace frame::runtime::detail
