// The ONNX frontend starts the warm-ups of a session's backends once the model is parsed,
// before it is imported, and waits for them before it returns (src/onnx/session.cpp, WarmUps;
// ops::register_warm_up): opening a model without conv or recurrent nodes, or a conv model of
// fixed shapes, leaves oneDNN's gemm warm-up unstarted; a conv model with a symbolic batch
// starts it, and the session then runs a new batch size (y = 2x, by hand). Meaningful in a
// process that started no warm-up yet: ctest runs this suite on its own
// (onnx_warm_up_fresh_process); in the whole binary an earlier test may have started it.

#include "backends/onednn/warm_up.h"

#include <gtest/gtest.h>

#include <vector>

#include "frame/onnx/session.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)

TEST(OnnxWarmUp, OpeningAConvModelStartsTheGemmWarmUp) {
  if (backends::onednn::gemm_warm_up_started()) GTEST_SKIP() << "started by an earlier test";
  runtime::SessionOptions o;
  o.compile.backends = {"onednn", "cpu"};
  o.compile.num_threads = 1;
  ModelBuilder relu(17);
  relu.input("x", {1, 2}).output("y").add(node("Relu", {"x"}, {"y"}));
  ASSERT_TRUE(open_session_from_bytes(relu.bytes(), o).is_ok());
  EXPECT_FALSE(backends::onednn::gemm_warm_up_started());
  const auto conv_model = [](int64_t batch) {
    ModelBuilder conv(17);
    conv.input("x", {batch, 1, 2, 2})
        .output("y")
        .init(float_tensor("w", {1, 1, 1, 1}, {2.0F}))
        .add(node("Conv", {"x", "w"}, {"y"}));
    return conv.bytes();
  };
  ASSERT_TRUE(open_session_from_bytes(conv_model(1), o).is_ok());
  EXPECT_FALSE(backends::onednn::gemm_warm_up_started());
  Result<runtime::Session> s = open_session_from_bytes(conv_model(-1), o);  // batch "N"
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_TRUE(backends::onednn::gemm_warm_up_started());
  Result<runtime::TensorMap> out =
      s->run({{"x", Tensor::from_vector<float>({2, 1, 2, 2}, {1, -2, 3, 4, 0, 5, -6, 7})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = out->at("y");
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 8),
            (std::vector<float>{2, -4, 6, 8, 0, 10, -12, 14}));
}

}  // namespace
}  // namespace frame::onnx
