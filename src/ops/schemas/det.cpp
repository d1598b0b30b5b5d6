// Det (ONNX opset 11): determinant of square matrices over the last two dims.

#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

Result<std::vector<ir::TensorType>> infer_det(const NodeContext& ctx) {
  const ir::TensorType& x = ctx.input_types[0];
  const int64_t r = x.rank();
  if (r < 2 || x.shape[r - 1] != x.shape[r - 2]) {
    return ctx.error("input 0 (X) expects [*, M, M] (square matrices), got {}",
                     shape_to_string(x.shape));
  }
  return one_output(x.dtype, Shape(x.shape.begin(), x.shape.end() - 2));
}

FRAME_REGISTER_OP(det)
    .doc(
        "Determinant (ONNX Det opset 11) of X [*, M, M] over the last two dims; output [*]. "
        "LU factorisation with partial pivoting computed in the element type (float for 16-bit "
        "floats), as LAPACK getrf does for numpy.linalg.det; M = 0 gives 1.")
    .input("X", "[*, M, M] square matrices", kFloatDTypes, "T")
    .output("Y", "[*] determinants", kFloatDTypes, "T")
    .shape_infer(infer_det);

}  // namespace
}  // namespace frame::ops
