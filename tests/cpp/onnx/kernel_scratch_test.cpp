// Kernel scratch memory stays bounded (docs/security.md, "Memory outside the plan"): the cpu
// convolutions tile their im2col / col2im / offset tables, pad and resize build no table per
// output index whose size the model controls, and a typed-field initializer is checked before
// its buffer is allocated. Expected values are computed here with plain loops (direct
// convolution, numpy.pad / ONNX Resize index formulas), never by frame.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "frame/runtime/compile.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

using namespace frame::onnx::testing;  // NOLINT(build/namespaces)
using ::onnx::TensorProto;
using runtime::TensorMap;

// The cpu convolutions' scratch budget (kConvScratchBytes in src/backends/cpu/kernels), mirrored
// to choose shapes whose tile boundary falls inside an output row.
constexpr int64_t kConvScratchBytes = int64_t{4} << 20;

// Peak resident set of this process so far, in bytes.
int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

::onnx::TensorProto typed_tensor(const std::string& name, int32_t type,
                                 const std::vector<int64_t>& dims, const std::string& raw) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(raw);
  return t;
}

template <typename T>
std::string raw_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

runtime::SessionOptions on(const std::string& backend) {
  runtime::SessionOptions o;
  o.compile.backends = {backend};
  return o;
}

Result<TensorMap> run_model(const std::string& bytes, const TensorMap& in,
                            const std::string& backend = "auto") {
  FRAME_ASSIGN_OR_RETURN(runtime::Session s, open_session_from_bytes(bytes, on(backend)));
  return s.run(in);
}

// f64 Conv, 3 -> 2 channels, 3x3 kernel, pads 1, bias, on a 152x152 image: 27 im2col rows of
// 8 bytes, so a tile holds 4 MiB / 216 = 19418 positions of the 23104, and the first tile
// ends inside output row 127 (19418 = 127 * 152 + 114).
TEST(KernelScratch, TiledConvMatchesDirectConvolution) {
  const int64_t C = 3, M = 2, H = 152, W = 152, K = 3;
  const int64_t tile = kConvScratchBytes / (C * K * K * 8);
  ASSERT_LT(tile, H * W);
  ASSERT_NE(tile % W, 0);
  std::vector<double> x(static_cast<size_t>(C * H * W)), w(static_cast<size_t>(M * C * K * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 37) % 101) / 7.0 - 6.0;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>((i * 13) % 17) / 5.0 - 1.5;
  const std::vector<double> b = {0.25, -1.0};
  ModelBuilder m(17);
  m.input("x", {1, C, H, W}, TensorProto::DOUBLE).output("y", TensorProto::DOUBLE);
  m.init(typed_tensor("w", TensorProto::DOUBLE, {M, C, K, K}, raw_of(w)));
  m.init(typed_tensor("b", TensorProto::DOUBLE, {M}, raw_of(b)));
  m.add(node("Conv", {"x", "w", "b"}, {"y"}, "conv", {attr_ints("pads", {1, 1, 1, 1})}));
  Result<TensorMap> out =
      run_model(m.bytes(), {{"x", Tensor::from_vector<double>({1, C, H, W}, x)}}, "cpu");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.shape(), (Shape{1, M, H, W}));
  const double* yp = y.data<double>();
  for (int64_t mo = 0; mo < M; ++mo) {
    for (int64_t i = 0; i < H; ++i) {
      for (int64_t j = 0; j < W; ++j) {
        double s = b[static_cast<size_t>(mo)];
        for (int64_t c = 0; c < C; ++c) {
          for (int64_t ki = 0; ki < K; ++ki) {
            for (int64_t kj = 0; kj < K; ++kj) {
              const int64_t yi = i + ki - 1, xj = j + kj - 1;
              if (yi < 0 || yi >= H || xj < 0 || xj >= W) continue;
              s += x[static_cast<size_t>((c * H + yi) * W + xj)] *
                   w[static_cast<size_t>(((mo * C + c) * K + ki) * K + kj)];
            }
          }
        }
        ASSERT_NEAR(yp[(mo * H + i) * W + j], s, 1e-9) << "m " << mo << " at " << i << "," << j;
      }
    }
  }
}

// f64 ConvTranspose 1 -> 4 channels, 5x5 kernel, stride 2, pads 1 over a 200x200 input: 100
// col rows, tiles of 4 MiB / 800 = 5242 input positions, the first ending inside input row 26.
TEST(KernelScratch, TiledConvTransposeMatchesDirectScatter) {
  const int64_t M = 4, H = 200, W = 200, K = 5, S = 2, P = 1;
  const int64_t tile = kConvScratchBytes / (M * K * K * 8);
  ASSERT_LT(tile, H * W);
  ASSERT_NE(tile % W, 0);
  const int64_t OH = (H - 1) * S - 2 * P + K, OW = (W - 1) * S - 2 * P + K;
  std::vector<double> x(static_cast<size_t>(H * W)), w(static_cast<size_t>(M * K * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 29) % 53) / 4.0 - 6.0;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>((i * 11) % 19) / 3.0 - 3.0;
  ModelBuilder m(17);
  m.input("x", {1, 1, H, W}, TensorProto::DOUBLE).output("y", TensorProto::DOUBLE);
  m.init(typed_tensor("w", TensorProto::DOUBLE, {1, M, K, K}, raw_of(w)));
  m.add(node("ConvTranspose", {"x", "w"}, {"y"}, "convt",
             {attr_ints("strides", {S, S}), attr_ints("pads", {P, P, P, P})}));
  Result<TensorMap> out =
      run_model(m.bytes(), {{"x", Tensor::from_vector<double>({1, 1, H, W}, x)}}, "cpu");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.shape(), (Shape{1, M, OH, OW}));
  std::vector<double> want(static_cast<size_t>(M * OH * OW), 0.0);
  for (int64_t mo = 0; mo < M; ++mo) {
    for (int64_t i = 0; i < H; ++i) {
      for (int64_t j = 0; j < W; ++j) {
        for (int64_t ki = 0; ki < K; ++ki) {
          for (int64_t kj = 0; kj < K; ++kj) {
            const int64_t oi = i * S - P + ki, oj = j * S - P + kj;
            if (oi < 0 || oi >= OH || oj < 0 || oj >= OW) continue;
            want[static_cast<size_t>((mo * OH + oi) * OW + oj)] +=
                x[static_cast<size_t>(i * W + j)] * w[static_cast<size_t>((mo * K + ki) * K + kj)];
          }
        }
      }
    }
  }
  const double* yp = y.data<double>();
  for (size_t e = 0; e < want.size(); ++e) ASSERT_NEAR(yp[e], want[e], 1e-9) << "element " << e;
}

// u8 ConvInteger, 3x3 kernel over 260x260, no padding: 9 taps of 8-byte offsets, tiles of
// 58254 of the 66564 positions, the first ending inside output row 225 (58254 = 225*258 + 204).
TEST(KernelScratch, TiledConvIntegerMatchesDirectConvolution) {
  const int64_t H = 260, W = 260, K = 3, OH = H - K + 1, OW = W - K + 1;
  const int64_t tile = kConvScratchBytes / (K * K * 8);
  ASSERT_LT(tile, OH * OW);
  ASSERT_NE(tile % OW, 0);
  std::vector<uint8_t> x(static_cast<size_t>(H * W)), w(static_cast<size_t>(K * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 31) % 251);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 7 + 1);
  const uint8_t xzp = 3, wzp = 2;
  ModelBuilder m(17);
  m.input("x", {1, 1, H, W}, TensorProto::UINT8).output("y", TensorProto::INT32);
  m.init(typed_tensor("w", TensorProto::UINT8, {1, 1, K, K}, raw_of(w)));
  m.init(typed_tensor("xz", TensorProto::UINT8, {}, raw_of(std::vector<uint8_t>{xzp})));
  m.init(typed_tensor("wz", TensorProto::UINT8, {}, raw_of(std::vector<uint8_t>{wzp})));
  m.add(node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, "convint"));
  Result<TensorMap> out =
      run_model(m.bytes(), {{"x", Tensor::from_vector<uint8_t>({1, 1, H, W}, x)}}, "cpu");
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.shape(), (Shape{1, 1, OH, OW}));
  const int32_t* yp = y.data<int32_t>();
  for (int64_t i = 0; i < OH; ++i) {
    for (int64_t j = 0; j < OW; ++j) {
      int32_t s = 0;
      for (int64_t ki = 0; ki < K; ++ki) {
        for (int64_t kj = 0; kj < K; ++kj) {
          s += (x[static_cast<size_t>((i + ki) * W + j + kj)] - xzp) *
               (w[static_cast<size_t>(ki * K + kj)] - wzp);
        }
      }
      ASSERT_EQ(yp[i * OW + j], s) << "at " << i << "," << j;
    }
  }
}

// A 96x96 all-ones kernel over a 192x192 f64 image: the whole im2col matrix would be 9216 x 9409
// doubles (694 MB); tiled, the run's peak grows by far less. Each output is a window sum,
// checked against a summed-area table.
TEST(KernelScratch, LargeKernelConvRunsInBoundedMemory) {
  const int64_t H = 192, K = 96, O = H - K + 1;
  std::vector<double> x(static_cast<size_t>(H * H));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 7);
  std::vector<double> w(static_cast<size_t>(K * K), 1.0);
  ModelBuilder m(17);
  m.input("x", {1, 1, H, H}, TensorProto::DOUBLE).output("y", TensorProto::DOUBLE);
  m.init(typed_tensor("w", TensorProto::DOUBLE, {1, 1, K, K}, raw_of(w)));
  m.add(node("Conv", {"x", "w"}, {"y"}, "conv"));
  const int64_t before = peak_rss_bytes();
  Result<TensorMap> out =
      run_model(m.bytes(), {{"x", Tensor::from_vector<double>({1, 1, H, H}, x)}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_LT(peak_rss_bytes() - before, int64_t{256} << 20);
  std::vector<double> sat(static_cast<size_t>((H + 1) * (H + 1)), 0.0);
  auto at = [&](int64_t i, int64_t j) -> double& {
    return sat[static_cast<size_t>(i * (H + 1) + j)];
  };
  for (int64_t i = 0; i < H; ++i) {
    for (int64_t j = 0; j < H; ++j) {
      at(i + 1, j + 1) = x[static_cast<size_t>(i * H + j)] + at(i, j + 1) + at(i + 1, j) - at(i, j);
    }
  }
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.shape(), (Shape{1, 1, O, O}));
  for (int64_t i = 0; i < O; ++i) {
    for (int64_t j = 0; j < O; ++j) {
      const double want = at(i + K, j + K) - at(i, j + K) - at(i + K, j) + at(i, j);
      ASSERT_EQ(y.data<double>()[i * O + j], want) << "at " << i << "," << j;
    }
  }
}

// The tester's 200-byte ConvInteger (a 512x512 kernel over 1024x1024, 262144 x 263169 offsets
// = 552 GB in one table) now compiles: the prepared table is one 4 MiB tile.
TEST(KernelScratch, HugeConvIntegerTableIsNotBuiltAtCompile) {
  ModelBuilder m(17);
  m.input("x", {1, 1, 1024, 1024}, TensorProto::UINT8).output("y", TensorProto::INT32);
  m.init(typed_tensor("w", TensorProto::UINT8, {1, 1, 512, 512},
                      std::string(size_t{512} * 512, '\1')));
  m.add(node("ConvInteger", {"x", "w"}, {"y"}, "convint"));
  const int64_t before = peak_rss_bytes();
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  runtime::CompileOptions o;
  o.backends = {"cpu"};
  o.use_cache = false;
  Result<runtime::Executable> e = runtime::compile(*g, o);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_LT(peak_rss_bytes() - before, int64_t{256} << 20);
}

// Pad of a [1, 1] u8 tensor to [2^23 + 1, 2] (constant 7): 16 MB of output, where a source
// table per output row would add 64 MB or more. Both backends; every value checked.
TEST(KernelScratch, ThinConstantPadNeedsNoRowTable) {
  const int64_t rows = (int64_t{1} << 23) + 1;
  for (const std::string backend : {"auto", "cpu"}) {
    ModelBuilder m(18);
    m.input("x", {1, 1}, TensorProto::UINT8).output("y", TensorProto::UINT8);
    m.init(int64_tensor("p", {4}, {0, 0, rows - 1, 1}));
    m.init(typed_tensor("v", TensorProto::UINT8, {}, raw_of(std::vector<uint8_t>{7})));
    m.add(node("Pad", {"x", "p", "v"}, {"y"}, "pad"));
    const int64_t before = peak_rss_bytes();
    Result<TensorMap> out =
        run_model(m.bytes(), {{"x", Tensor::from_vector<uint8_t>({1, 1}, {200})}}, backend);
    ASSERT_TRUE(out.is_ok()) << backend << ": " << out.status().message();
    EXPECT_LT(peak_rss_bytes() - before, int64_t{48} << 20) << backend;
    const Tensor& y = out->at("y");
    ASSERT_EQ(y.shape(), (Shape{rows, 2})) << backend;
    const uint8_t* yp = y.data<uint8_t>();
    ASSERT_EQ(yp[0], 200) << backend;
    for (int64_t e = 1; e < rows * 2; ++e) ASSERT_EQ(yp[e], 7) << backend << " element " << e;
  }
}

// Edge and reflect padding of the last padded axis with whole unpadded blocks after it (the
// repeat segments copy a block of 2): numpy.pad's index rules, x[2, 3, 2] padded on axis 1 by
// (2, 3) (reflect: (2, 2)); both backends.
TEST(KernelScratch, EdgeAndReflectPadOfBlocks) {
  std::vector<float> x(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  struct Mode {
    const char* name;
    int64_t end;  // reflect needs pads < the axis size
    int64_t (*src)(int64_t);
  };
  const Mode modes[] = {
      {"edge", 3, [](int64_t i) -> int64_t { return i < 0 ? 0 : (i > 2 ? 2 : i); }},
      {"reflect", 2,
       [](int64_t i) -> int64_t {
         const int64_t m = ((i % 4) + 4) % 4;  // period 2 * (3 - 1)
         return m < 3 ? m : 4 - m;
       }},
      {"wrap", 3, [](int64_t i) -> int64_t { return ((i % 3) + 3) % 3; }},
  };
  for (const Mode& mode : modes) {
    for (const std::string backend : {"auto", "cpu"}) {
      ModelBuilder m(19);
      m.input("x", {2, 3, 2}).output("y");
      m.init(int64_tensor("p", {6}, {0, 2, 0, 0, mode.end, 0}));
      ::onnx::AttributeProto a;
      a.set_name("mode");
      a.set_type(::onnx::AttributeProto::STRING);
      a.set_s(mode.name);
      m.add(node("Pad", {"x", "p"}, {"y"}, "pad", {a}));
      Result<TensorMap> out =
          run_model(m.bytes(), {{"x", Tensor::from_vector<float>({2, 3, 2}, x)}}, backend);
      ASSERT_TRUE(out.is_ok()) << mode.name << " " << backend << ": " << out.status().message();
      const Tensor& y = out->at("y");
      const int64_t len = 5 + mode.end;
      ASSERT_EQ(y.shape(), (Shape{2, len, 2}));
      for (int64_t n = 0; n < 2; ++n) {
        for (int64_t o = 0; o < len; ++o) {
          for (int64_t k = 0; k < 2; ++k) {
            const float want = x[static_cast<size_t>((n * 3 + mode.src(o - 2)) * 2 + k)];
            EXPECT_EQ(y.data<float>()[(n * len + o) * 2 + k], want)
                << mode.name << " " << backend << " at " << n << "," << o << "," << k;
          }
        }
      }
    }
  }
}

// Nearest resize of a u8 [1, 1, 1, 4] row to 2^20 columns: the per-column tables (73 bytes
// per column) would be ~76 MB for a 1 MiB output, so the taps are computed per element.
// Values by ONNX's half_pixel + round_prefer_floor rule: x = (o + 0.5) / 262144 - 0.5.
TEST(KernelScratch, ThinNearestResizeComputesTapsOnTheFly) {
  const int64_t ow = int64_t{1} << 20;
  for (const std::string backend : {"auto", "cpu"}) {
    ModelBuilder m(19);
    m.input("x", {1, 1, 1, 4}, TensorProto::UINT8).output("y", TensorProto::UINT8);
    m.init(int64_tensor("sz", {4}, {1, 1, 1, ow}));
    ::onnx::AttributeProto a;
    a.set_name("mode");
    a.set_type(::onnx::AttributeProto::STRING);
    a.set_s("nearest");
    m.add(node("Resize", {"x", "", "", "sz"}, {"y"}, "resize", {a}));
    const int64_t before = peak_rss_bytes();
    Result<TensorMap> out = run_model(
        m.bytes(), {{"x", Tensor::from_vector<uint8_t>({1, 1, 1, 4}, {10, 20, 30, 40})}}, backend);
    ASSERT_TRUE(out.is_ok()) << backend << ": " << out.status().message();
    EXPECT_LT(peak_rss_bytes() - before, int64_t{24} << 20) << backend;
    const uint8_t* yp = out->at("y").data<uint8_t>();
    for (int64_t o = 0; o < ow; ++o) {
      const double xs = (static_cast<double>(o) + 0.5) / 262144.0 - 0.5;
      const double f = std::floor(xs);
      int64_t i = static_cast<int64_t>(xs - f == 0.5 ? f : std::round(xs));
      i = i < 0 ? 0 : (i > 3 ? 3 : i);
      ASSERT_EQ(yp[o], 10 * (i + 1)) << backend << " column " << o;
    }
  }
}

}  // namespace
}  // namespace frame::onnx
