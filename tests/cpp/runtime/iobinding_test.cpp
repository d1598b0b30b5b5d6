// Running into caller-provided output buffers (IoBinding): results equal run()'s, outputs that
// are graph inputs or repeated are filled too, errors name the output with expected vs
// actual, and a caller reusing its tensors makes the runtime allocate nothing per run.

// The replaced operator new/delete below are malloc/free underneath; g++ 12 flags every
// inlined delete of a new-ed pointer as mismatched (a false positive for replaced functions).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "common/graph_builder.h"
#include "frame/ops/kernel_registry.h"
#include "frame/runtime/compile.h"

// Counting global allocation functions (this test binary only): counts while g_counting.
namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};
}  // namespace

// ThreadSanitizer's runtime owns the global allocation functions (a second definition does
// not link), so under TSan they are not replaced and the counting tests skip.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FRAME_NO_COUNTING_NEW 1
#endif
#endif

#ifndef FRAME_NO_COUNTING_NEW
void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) ++g_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace frame::runtime {
namespace {

using test::kF32;
using test::node;

// Allocation-free kernels of a test backend, so the count measures the runtime alone.
Status nb_add(ops::KernelContext& ctx) {
  const float* a = ctx.input(0).data<float>();
  const float* b = ctx.input(1).data<float>();
  float* o = ctx.output(0).data<float>();
  for (int64_t i = 0; i < ctx.output(0).numel(); ++i) o[i] = a[i] + b[i];
  return Status();
}
Status nb_mul(ops::KernelContext& ctx) {
  const float* a = ctx.input(0).data<float>();
  const float* b = ctx.input(1).data<float>();
  float* o = ctx.output(0).data<float>();
  for (int64_t i = 0; i < ctx.output(0).numel(); ++i) o[i] = a[i] * b[i];
  return Status();
}
FRAME_REGISTER_KERNEL(add, "rt_noalloc", nb_add).dtypes({kF32});
FRAME_REGISTER_KERNEL(mul, "rt_noalloc", nb_mul).dtypes({kF32});

// s = x + y, p = s * y (an intermediate in the arena), outputs p, s, and x itself.
ir::Graph graph(std::string name) {
  ir::Graph g(std::move(name));
  ir::ValueId x = g.add_input("x", ir::TensorType{kF32, {2, 3}});
  ir::ValueId y = g.add_input("y", ir::TensorType{kF32, {2, 3}});
  ir::ValueId s = node(g, "add", "s", {x, y});
  ir::ValueId t = node(g, "mul", "t", {s, y});
  g.add_output(node(g, "add", "p", {t, x}));
  g.add_output(s);
  g.add_output(x);
  return g;
}

Executable compiled(std::vector<std::string> backends) {
  CompileOptions o;
  o.backends = std::move(backends);
  o.strict = o.backends.front() == "rt_noalloc";
  o.use_cache = false;
  auto exe = compile(graph("iobinding"), o);
  EXPECT_TRUE(exe.is_ok()) << exe.status().to_string();
  return *exe;
}

const std::vector<float> kX = {1, -2, 3, 0.5F, 0, -1};
const std::vector<float> kY = {2, 2, -1, 4, 3, 0.25F};

TensorMap inputs() {
  return {{"x", Tensor::from_vector<float>({2, 3}, kX)},
          {"y", Tensor::from_vector<float>({2, 3}, kY)}};
}

TEST(IoBinding, WritesIntoCallerBuffersAndMatchesRun) {
  for (const char* backend : {"cpu", "rt_noalloc"}) {
    Executable exe = compiled({backend});
    auto ref = exe.run(inputs());
    ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
    std::vector<float> p(6, -99), s(6, -99), x(6, -99);
    TensorMap out = {{"p", *Tensor::view(kF32, {2, 3}, p.data())},
                     {"s", *Tensor::view(kF32, {2, 3}, s.data())},
                     {"x", *Tensor::view(kF32, {2, 3}, x.data())}};
    for (int run = 0; run < 2; ++run) {
      Status st = exe.run(inputs(), out);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      for (size_t i = 0; i < 6; ++i) {
        const float sv = kX[i] + kY[i];
        EXPECT_EQ(s[i], sv) << backend << " " << i;
        EXPECT_EQ(p[i], sv * kY[i] + kX[i]) << backend << " " << i;
        EXPECT_EQ(x[i], kX[i]) << backend << " " << i;
        EXPECT_EQ(p[i], ref->at("p").data<float>()[i]);
        EXPECT_EQ(s[i], ref->at("s").data<float>()[i]);
        EXPECT_EQ(x[i], ref->at("x").data<float>()[i]);
      }
      EXPECT_EQ(out.at("p").raw_data(), p.data());  // the caller's tensors are kept
    }
  }
}

std::string bind_error(const Executable& exe, TensorMap out) {
  Status s = exe.run(inputs(), out);
  return s.is_ok() ? "ok" : s.to_string();
}

TEST(IoBinding, ErrorsNameTheOutputWithExpectedAndActual) {
  Executable exe = compiled({"cpu"});
  std::vector<float> buf(6, -7.0F);
  auto ok = [&] { return *Tensor::view(kF32, {2, 3}, buf.data()); };
  EXPECT_EQ(bind_error(exe, {{"p", ok()}, {"s", ok()}}),
            "invalid_argument: missing output 'x' (expected a tensor f32[2,3] to write into)");
  EXPECT_EQ(bind_error(exe, {{"p", ok()}, {"s", ok()}, {"x", ok()}, {"q", ok()}}),
            "invalid_argument: unknown output 'q' (graph outputs: p, s, x)");
  EXPECT_EQ(
      bind_error(exe, {{"p", *Tensor::zeros(DTypeCode::kInt64, {2, 3})}, {"s", ok()}, {"x", ok()}}),
      "invalid_argument: output 'p': the run produces f32[2,3], the tensor given to write it into "
      "is i64[2,3]");
  EXPECT_EQ(bind_error(exe, {{"p", ok()}, {"s", *Tensor::zeros(kF32, {3, 2})}, {"x", ok()}}),
            "invalid_argument: output 's': the run produces f32[2,3], the tensor given to write it "
            "into is f32[3,2]");
  EXPECT_EQ(bind_error(exe, {{"p", ok()}, {"s", ok()}, {"x", Tensor()}}),
            "invalid_argument: output 'x': the run produces f32[2,3], the tensor given to write it "
            "into is an undefined tensor");
  for (float v : buf) EXPECT_EQ(v, -7.0F);  // nothing was written on error
  // Buffers must not overlap an input or each other.
  std::vector<float> p(6), s2(6);
  const TensorMap in = inputs();
  TensorMap aliased = {{"p", *Tensor::view(kF32, {2, 3}, p.data())},
                       {"s", *Tensor::view(kF32, {2, 3}, s2.data())},
                       {"x", in.at("y")}};
  EXPECT_EQ(exe.run(in, aliased).to_string(),
            "invalid_argument: output 'x' shares memory with input 'y'");
  aliased["x"] = *Tensor::view(kF32, {2, 3}, p.data() + 3);
  EXPECT_EQ(exe.run(in, aliased).to_string(),
            "invalid_argument: output 'x' shares memory with output 'p'");
  // Input errors keep their messages.
  TensorMap out = {{"p", ok()}, {"s", ok()}, {"x", ok()}};
  Status s = exe.run({{"x", Tensor::from_vector<float>({2, 3}, kX)}}, out);
  EXPECT_EQ(s.to_string(), "invalid_argument: missing input 'y' (expected f32[2,3])");
}

TEST(IoBinding, SteadyStateRunsAllocateNothing) {
#ifdef FRAME_NO_COUNTING_NEW
  GTEST_SKIP() << "allocation counting needs the replaced operator new (not under TSan)";
#endif
  Executable exe = compiled({"rt_noalloc"});
  const TensorMap in = inputs();
  std::vector<float> p(6), s(6), x(6);
  TensorMap out = {{"p", *Tensor::view(kF32, {2, 3}, p.data())},
                   {"s", *Tensor::view(kF32, {2, 3}, s.data())},
                   {"x", *Tensor::view(kF32, {2, 3}, x.data())}};
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(exe.run(in, out).is_ok());  // run slot made
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < 20; ++i) {
    if (!exe.run(in, out).is_ok()) break;
  }
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0);
  EXPECT_EQ(p[5], (kX[5] + kY[5]) * kY[5] + kX[5]);
  // The allocating form does allocate (its outputs), so the counter does count.
  g_allocations = 0;
  g_counting = true;
  auto r = exe.run(in);
  g_counting = false;
  ASSERT_TRUE(r.is_ok());
  EXPECT_GT(g_allocations.load(), 0);
}

// A loop over y += x (x captured), with a scan output stacking every y when `scan` (then the
// trip count is the constant `trips`, ARCH-044), else with the trip count as input "M".
Executable loop_exe(bool scan, int64_t trips) {
  const ir::TensorType f4{kF32, {4}};
  auto body = std::make_shared<ir::Graph>("acc_body");
  body->add_input("i", ir::TensorType{DTypeCode::kInt64, {}});
  const ir::ValueId c = body->add_input("c", ir::TensorType{DTypeCode::kBool, {}});
  const ir::ValueId y = body->add_input("y", f4);
  const ir::ValueId x = body->add_input("x", f4);
  const ir::NodeId co = body->create_node("identity", "co", {c}, 1).value();
  const ir::NodeId yo = body->create_node("add", "yo", {y, x}, 1).value();
  body->add_output(body->node(co).outputs[0]);
  body->add_output(body->node(yo).outputs[0]);
  if (scan) {
    const ir::NodeId s = body->create_node("identity", "s", {body->node(yo).outputs[0]}, 1).value();
    body->add_output(body->node(s).outputs[0]);
  }
  ir::Graph g;
  const ir::ValueId m = scan ? g.add_constant("M", Tensor::scalar<int64_t>(trips))
                             : g.add_input("M", ir::TensorType{DTypeCode::kInt64, {}});
  const ir::ValueId cond = g.add_constant("cond", Tensor::scalar<bool>(true));
  const ir::ValueId y0 = g.add_input("y0", f4);
  const ir::ValueId gx = g.add_input("x", f4);
  ir::AttrMap attrs = {{"body", std::shared_ptr<const ir::Graph>(body)},
                       {"num_captured", int64_t{1}}};
  const ir::NodeId l =
      g.create_node("loop", "loop", {m, cond, y0, gx}, scan ? 2 : 1, attrs,
                    scan ? std::vector<std::string>{"y", "stack"} : std::vector<std::string>{"y"})
          .value();
  for (ir::ValueId v : g.node(l).outputs) g.add_output(v);
  // The body's add runs on the allocation-free test kernel, so the count measures the loop
  // kernel and the runtime's nested plan alone.
  CompileOptions o;
  o.backends = {"rt_noalloc", "cpu"};
  o.use_cache = false;
  Result<Executable> exe = compile(g, o);
  EXPECT_TRUE(exe.is_ok()) << exe.status().message();
  return std::move(exe).value();
}

// Allocations of `runs` runs into caller buffers after two warm-up runs.
int64_t loop_run_allocations(const Executable& exe, const TensorMap& in, TensorMap& out) {
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(exe.run(in, out).is_ok());
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < 5; ++i) {
    if (!exe.run(in, out).is_ok()) break;
  }
  g_counting = false;
  return g_allocations.load();
}

TEST(IoBinding, LoopIterationsAllocateNothing) {
#ifdef FRAME_NO_COUNTING_NEW
  GTEST_SKIP() << "allocation counting needs the replaced operator new (not under TSan)";
#endif
  // Per-run buffers (carried spares, slice buffers) are allowed; per-iteration ones are not:
  // 1000 iterations must allocate exactly what 10 do.
  std::vector<float> y(4);
  const Tensor ones = Tensor::from_vector<float>({4}, {1, 1, 1, 1});
  const Tensor zeros = Tensor::from_vector<float>({4}, {0, 0, 0, 0});
  Executable runtime_m = loop_exe(false, 0);
  TensorMap out = {{"y", *Tensor::view(kF32, {4}, y.data())}};
  const int64_t few = loop_run_allocations(
      runtime_m, {{"M", Tensor::scalar<int64_t>(10)}, {"y0", zeros}, {"x", ones}}, out);
  EXPECT_EQ(y[3], 10.f);
  const int64_t many = loop_run_allocations(
      runtime_m, {{"M", Tensor::scalar<int64_t>(1000)}, {"y0", zeros}, {"x", ones}}, out);
  EXPECT_EQ(y[3], 1000.f);
  EXPECT_EQ(few, many);

  std::vector<float> stack_few(40), stack_many(4000);
  Executable scan_few = loop_exe(true, 10);
  Executable scan_many = loop_exe(true, 1000);
  TensorMap out_few = {{"y", *Tensor::view(kF32, {4}, y.data())},
                       {"stack", *Tensor::view(kF32, {10, 4}, stack_few.data())}};
  TensorMap out_many = {{"y", *Tensor::view(kF32, {4}, y.data())},
                        {"stack", *Tensor::view(kF32, {1000, 4}, stack_many.data())}};
  const TensorMap in = {{"y0", zeros}, {"x", ones}};
  const int64_t scan_alloc_few = loop_run_allocations(scan_few, in, out_few);
  const int64_t scan_alloc_many = loop_run_allocations(scan_many, in, out_many);
  EXPECT_EQ(scan_alloc_few, scan_alloc_many);
  EXPECT_EQ(stack_many[4 * 999 + 2], 1000.f);  // row i holds (i + 1) * x
  EXPECT_EQ(stack_few[4 * 3], 4.f);
}

}  // namespace
}  // namespace frame::runtime
