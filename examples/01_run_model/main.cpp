// Load an ONNX model, compile it, run it on an input from a .npy file, print the outputs.
// Usage: example_01_run_model MODEL.onnx INPUT.npy   (the model's first input gets the file)
#include <cstdio>

#include "frame/core/npy.h"
#include "frame/onnx/onnx.h"
#include "frame/runtime/compile.h"

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: %s MODEL.onnx INPUT.npy\n", argv[0]), 2;
  frame::Result<frame::ir::Graph> graph = frame::onnx::load(argv[1]);  // parse + import
  if (!graph.is_ok()) return std::fprintf(stderr, "%s\n", graph.status().message().c_str()), 1;
  frame::Result<frame::runtime::Executable> exe = frame::runtime::compile(*graph);  // passes
  if (!exe.is_ok()) return std::fprintf(stderr, "%s\n", exe.status().message().c_str()), 1;
  frame::Result<frame::Tensor> x = frame::read_npy(argv[2]);
  if (!x.is_ok()) return std::fprintf(stderr, "%s\n", x.status().message().c_str()), 1;
  const std::string& input = exe->input_signature().at(0).first;
  frame::Result<frame::runtime::TensorMap> out = exe->run({{input, *x}});
  if (!out.is_ok()) return std::fprintf(stderr, "%s\n", out.status().message().c_str()), 1;
  for (const auto& [name, t] : *out) {
    std::printf("%s %s:", name.c_str(), frame::shape_to_string(t.shape()).c_str());
    for (int64_t i = 0; i < t.numel() && i < 5; ++i) std::printf(" %.6g", t.data<float>()[i]);
    std::printf("\n");
  }
  return 0;
}
