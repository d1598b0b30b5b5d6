#pragma once
/// \file
/// Factories of the builtin passes, one per src/passes/<pass>.cpp, used by make_pass
/// (pass_manager.cpp). Private to the passes layer.

#include <memory>

#include "frame/passes/pass.h"

namespace frame::passes {

/// "shape-inference": sets every node output's type from OpSchema::infer.
std::unique_ptr<Pass> make_shape_inference_pass();
/// "constant-folding": evaluates side-effect-free nodes of constants with their cpu kernel.
std::unique_ptr<Pass> make_constant_folding_pass();
/// "cse": merges structurally identical nodes (and identical small constants).
std::unique_ptr<Pass> make_cse_pass();
/// "dce": removes nodes no graph output or side effect needs; compacts the graph.
std::unique_ptr<Pass> make_dce_pass();
/// "float16-widening": computes f16 nodes the preferred backend has no f16 kernel for in f32.
std::unique_ptr<Pass> make_float16_widening_pass();
/// "decomposition": inlines composite ops the preferred backend has no kernel for.
std::unique_ptr<Pass> make_decomposition_pass();
/// "operator-fusion": groups fusable nodes (src/passes/operator_fusion.cpp).
std::unique_ptr<Pass> make_operator_fusion_pass();
/// "backend-lowering": places every node on a backend (src/passes/backend_lowering.cpp).
std::unique_ptr<Pass> make_backend_lowering_pass();
/// "memory-planning": assigns arena slots to values (src/passes/memory_planning.cpp).
std::unique_ptr<Pass> make_memory_planning_pass();

}  // namespace frame::passes
