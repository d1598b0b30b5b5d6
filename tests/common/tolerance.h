#pragma once
/// \file
/// BUILD-011 tolerances for tests: the library's one source (frame/core/tolerance.h) under the
/// names the tests use.

#include "frame/core/tolerance.h"

namespace frame::test {

using frame::compare_tensors;
using frame::CompareResult;
using frame::Tolerance;
using frame::tolerance_for;
using frame::ToleranceClass;
using frame::values_close;

}  // namespace frame::test
