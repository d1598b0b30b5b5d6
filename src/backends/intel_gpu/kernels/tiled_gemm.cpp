// The tiled GEMM body shared by gemm, matmul and conv on intel_gpu (tiled_gemm.h).

#include "backends/intel_gpu/kernels/tiled_gemm.h"

#include <fmt/format.h>

#include <string_view>

namespace frame::backends::intel_gpu {

namespace {

// Tile 32 (rows) x 32 (columns) x 16 (k); work-item (lx, ly) owns rows ly + 8u and columns
// lx + 8v (u, v < 4), so neighbouring work-items touch neighbouring columns. The __local
// rows are padded to 33 against bank conflicts. Loads outside M, N or K stage zeros, so the
// unrolled inner loop needs no bounds checks; the loads are ifs (never speculated out of
// bounds).
constexpr const char* kBody = R"(
  const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
  const int lid = ly * 8 + lx;
  const int r0 = (int)get_group_id(1) * 32, c0 = (int)get_group_id(0) * 32;
  __local T as[16][33];
  __local T bs[16][33];
  T acc[4][4];
  for (int u = 0; u < 4; ++u)
    for (int w = 0; w < 4; ++w) acc[u][w] = (T)0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int e = lid; e < 512; e += 64) {
      const int r = r0 + (e >> 4), k = k0 + (e & 15);
      T v = (T)0;
      if (r < M && k < K) {
{load_a}
      }
      as[e & 15][e >> 4] = v;
    }
    for (int e = lid; e < 512; e += 64) {
      const int k = k0 + (e >> 5), c = c0 + (e & 31);
      T v = (T)0;
      if (k < K && c < N) {
{load_b}
      }
      bs[e >> 5][e & 31] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < 16; ++kk) {
      T a[4], b[4];
      for (int u = 0; u < 4; ++u) {
        a[u] = as[kk][ly + 8 * u];
        b[u] = bs[kk][lx + 8 * u];
      }
      for (int u = 0; u < 4; ++u)
        for (int w = 0; w < 4; ++w) acc[u][w] += a[u] * b[w];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int u = 0; u < 4; ++u) {
    for (int w = 0; w < 4; ++w) {
      const int r = r0 + ly + 8 * u, c = c0 + lx + 8 * w;
      if (r < M && c < N) {
        const T acc_v = acc[u][w];
{store}
      }
    }
  }
}
)";

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// `text` with the placeholder `key` replaced by `value` (kBody's braces are OpenCL C).
std::string replace(std::string text, std::string_view key, std::string_view value) {
  const size_t at = text.find(key);
  if (at != std::string::npos) text.replace(at, key.size(), value);
  return text;
}

}  // namespace

std::string tiled_gemm_source(const ClType& t, const TiledGemmCode& code) {
  std::string s = cl_type_prelude(t) + code.helpers;
  s += fmt::format("__kernel __attribute__((reqd_work_group_size(8, 8, 1))) void {}(", code.name);
  for (size_t k = 0; k < code.inputs; ++k) {
    s += fmt::format("__global const {}* in{}, ", t.pointee, k);
  }
  s += fmt::format(
      "__global {}* out, const int rank, __global const int* m{}) {{\n"
      "  const int z = (int)get_global_id(2);\n",
      t.pointee, code.params);
  s += code.setup;
  s += replace(replace(replace(kBody, "{load_a}", code.load_a), "{load_b}", code.load_b), "{store}",
               code.store);
  return s;
}

void set_tiled_geometry(LaunchSpec& spec, int64_t m, int64_t n, int64_t batch) {
  spec.work_dim = 3;
  spec.global = std::array<size_t, 3>{static_cast<size_t>(ceil_div(n, kGemmTile) * kGemmGroupSide),
                                      static_cast<size_t>(ceil_div(m, kGemmTile) * kGemmGroupSide),
                                      static_cast<size_t>(batch)};
  spec.local = std::array<size_t, 3>{kGemmGroupSide, kGemmGroupSide, 1};
}

bool tiled_fits(const Launch& l) {
  size_t wg = 0;
  const cl_int e = clGetKernelWorkGroupInfo(l.kernel.get(), l.dev->id, CL_KERNEL_WORK_GROUP_SIZE,
                                            sizeof(wg), &wg, nullptr);
  return e == CL_SUCCESS && wg >= static_cast<size_t>(kGemmGroupSide * kGemmGroupSide);
}

}  // namespace frame::backends::intel_gpu
