// frame_compare_npy ACTUAL.npy EXPECTED.npy [--class op|deep]: compares two .npy files with the
// BUILD-011 tolerance (tests/common/tolerance.h); prints the errors; exit 0 when close, 1 when
// not, 2 on usage or I/O errors.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/tolerance.h"
#include "frame/core/npy.h"

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 5 && std::strcmp(argv[3], "--class") == 0)) {
    std::fprintf(stderr, "usage: frame_compare_npy ACTUAL.npy EXPECTED.npy [--class op|deep]\n");
    return 2;
  }
  const std::string cls = argc == 5 ? argv[4] : "op";
  if (cls != "op" && cls != "deep") {
    std::fprintf(stderr, "frame_compare_npy: --class must be op or deep, got '%s'\n", cls.c_str());
    return 2;
  }
  frame::Result<frame::Tensor> a = frame::read_npy(argv[1]);
  frame::Result<frame::Tensor> e = frame::read_npy(argv[2]);
  if (!a.is_ok() || !e.is_ok()) {
    std::fprintf(stderr, "frame_compare_npy: %s\n",
                 (!a.is_ok() ? a.status() : e.status()).message().c_str());
    return 2;
  }
  const auto tc =
      cls == "deep" ? frame::test::ToleranceClass::kDeepNetwork : frame::test::ToleranceClass::kOp;
  const frame::test::Tolerance tol = frame::test::tolerance_for(e->dtype(), tc);
  frame::test::CompareResult r = frame::test::compare_tensors(*a, *e, tol);
  std::printf("%s vs %s: max abs error %.3g, max rel error %.3g (rtol %g, atol %g): %s\n", argv[1],
              argv[2], r.max_abs_error, r.max_rel_error, tol.rtol, tol.atol,
              r.ok ? "ok" : "MISMATCH");
  if (!r.ok) std::printf("%s\n", r.message.c_str());
  return r.ok ? 0 : 1;
}
