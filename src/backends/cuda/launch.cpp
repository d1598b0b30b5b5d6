// Loading and launching the cuda backend's generated kernels (launch.h).

#include "backends/cuda/launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "backends/cuda/codegen.h"

namespace frame::backends::cuda {

CudaLaunch::~CudaLaunch() {
  if (dev == nullptr) return;
  if (module != nullptr) dev->api->cuModuleUnload(module);
  if (table != 0) dev->api->cuMemFree(table);
}

Status CudaLaunch::launch(CUstream stream, std::span<const CUdeviceptr> inputs, CUdeviceptr output,
                          CUdeviceptr workspace, CUdeviceptr error) const {
  if (work_items == 0) return Status();
  if (custom) return custom(stream, inputs, output, workspace);
  if (inputs.size() < geometry.num_inputs) {
    return internal_error("cuda: kernel launched with {} inputs, generated for {}", inputs.size(),
                          geometry.num_inputs);
  }
  // cuLaunchKernel copies each parameter from the pointer given for it.
  std::array<void*, kMaxInputs + 7> params{};
  std::array<CUdeviceptr, kMaxInputs + 1> ptrs{};
  size_t k = 0;
  for (; k < geometry.num_inputs; ++k) {
    ptrs[k] = inputs[k];
    params[k] = &ptrs[k];
  }
  ptrs[k] = output;
  params[k] = &ptrs[k];
  long long n64 = work_items;
  int n32 = static_cast<int>(work_items);
  params[k + 1] = geometry.wide ? static_cast<void*>(&n64) : static_cast<void*>(&n32);
  // The driver takes non-const pointers and only reads through them.
  params[k + 2] = const_cast<unsigned char*>(meta.data());
  double p0d = p0, p1d = p1;
  float p0f = static_cast<float>(p0), p1f = static_cast<float>(p1);
  params[k + 3] = t_is_double ? static_cast<void*>(&p0d) : static_cast<void*>(&p0f);
  params[k + 4] = t_is_double ? static_cast<void*>(&p1d) : static_cast<void*>(&p1f);
  if (device_error) {
    if (error == 0)
      return internal_error("cuda: a kernel that reports errors launched without a flag");
    params[k + 5] = &error;
  }
  return cu_check(
      *dev,
      dev->api->cuLaunchKernel(fn, grid, 1, 1, kBlock, 1, 1, 0, stream, params.data(), nullptr),
      "cuLaunchKernel");
}

Status load_kernel(CudaLaunch& l, const std::string& source, const std::string& where) {
  const CudaDevice* dev = selected_device();
  if (dev == nullptr) return unimplemented("{}cuda: {}", where, unavailable_reason());
  l.dev = dev;
  Result<std::shared_ptr<const Compiled>> bin = compile_cuda(source, dev->compute_capability);
  if (!bin.is_ok()) return bin.status().with_prefix(where);
  l.binary = std::move(bin).value();
  FRAME_RETURN_IF_ERROR(make_current(*dev).with_prefix(where));
  FRAME_RETURN_IF_ERROR(cu_check(*dev,
                                 dev->api->cuModuleLoadData(&l.module, l.binary->cubin.data()),
                                 "cuModuleLoadData")
                            .with_prefix(where));
  FRAME_RETURN_IF_ERROR(cu_check(*dev,
                                 dev->api->cuModuleGetFunction(&l.fn, l.module, "frame_kernel"),
                                 "cuModuleGetFunction")
                            .with_prefix(where));
  // One block per 1024 elements (4 per thread), at most 32 resident blocks per SM: the
  // grid-stride loop covers the rest.
  const int64_t want = (l.work_items + 4 * kBlock - 1) / (4 * kBlock);
  const int64_t cap = std::max(1, dev->multiprocessors) * int64_t{32};
  l.grid = static_cast<unsigned>(std::clamp<int64_t>(want, 1, cap));
  return Status();
}

Status device_ready(const ops::NodeContext& ctx) {
  const CudaDevice* dev = selected_device();
  if (dev == nullptr) return unimplemented("{}", unavailable_reason());
  auto too_big = [&](const ir::TensorType& t) {
    return static_cast<size_t>(numel_of(t.shape)) * dtype_size(t.dtype) > dev->total_memory;
  };
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && too_big(ctx.input_types[k])) {
      return unimplemented("input {} is larger than the device's memory", k);
    }
  }
  return Status();
}

Status device_error_status(const CudaLaunch& l, int32_t flag, CUdeviceptr input) {
  if (flag == 0 || !l.device_error) return Status();
  const int64_t position = 0x7fffffff - static_cast<int64_t>(flag);
  int64_t value = 0;
  if (l.error_elem_bytes == 4) {
    int32_t v = 0;
    FRAME_RETURN_IF_ERROR(cu_check(
        *l.dev, l.dev->api->cuMemcpyDtoH(&v, input + static_cast<CUdeviceptr>(position) * 4, 4),
        "reading the bad element back"));
    value = v;
  } else {
    FRAME_RETURN_IF_ERROR(cu_check(
        *l.dev, l.dev->api->cuMemcpyDtoH(&value, input + static_cast<CUdeviceptr>(position) * 8, 8),
        "reading the bad element back"));
  }
  return l.device_error(position, value);
}

Status generated_accepts(const ops::NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  return node_kernel(ctx).status();
}

Result<std::shared_ptr<void>> generated_prepare(const ops::NodeContext& ctx) {
  const std::string where = fmt::format("node '{}' ({}): cuda: ", ctx.node_name, ctx.op);
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where));
  Result<NodeKernel> k = node_kernel(ctx);
  if (!k.is_ok()) return k.status().with_prefix(where);
  auto l = std::make_shared<CudaLaunch>();
  l->geometry = k->geometry;
  l->in_bytes = std::move(k->in_bytes);
  l->out_bytes = k->out_bytes;
  l->work_items = k->work_items;
  l->meta = std::move(k->meta);
  l->p0 = k->p0;
  l->p1 = k->p1;
  l->t_is_double = k->t_is_double;
  l->device_error = std::move(k->device_error);
  l->error_input = k->error_input;
  l->error_elem_bytes = k->error_elem_bytes;
  FRAME_RETURN_IF_ERROR(load_kernel(*l, k->source, where));
  if (!k->table.empty()) {
    const size_t bytes = k->table.size() * sizeof(int32_t);
    FRAME_RETURN_IF_ERROR(
        cu_check(*l->dev, l->dev->api->cuMemAlloc(&l->table, bytes), "kernel table")
            .with_prefix(where));
    FRAME_RETURN_IF_ERROR(cu_check(*l->dev,
                                   l->dev->api->cuMemcpyHtoD(l->table, k->table.data(), bytes),
                                   "uploading the kernel table")
                              .with_prefix(where));
  }
  return std::shared_ptr<void>(std::move(l));
}

void register_generated_kernel(std::string_view op, DTypeSet dtypes, const char* file, int line) {
  ops::KernelDef def;
  def.op = std::string(op);
  def.backend = std::string(kBackendName);
  def.fn = run_standalone;
  def.prepare = generated_prepare;
  def.accepts = generated_accepts;
  def.dtypes = dtypes;
  def.file = file;
  def.line = line;
  ops::KernelRegistry::global().register_kernel(std::move(def));
}

namespace {

// Device memory freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(const CudaDevice& d, size_t bytes) : d_(&d) {
    status_ = cu_check(d, d.api->cuMemAlloc(&ptr_, std::max<size_t>(bytes, 1)), "cuMemAlloc");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != 0) d_->api->cuMemFree(ptr_);
  }
  CUdeviceptr get() const { return ptr_; }
  const Status& status() const { return status_; }

 private:
  const CudaDevice* d_;
  CUdeviceptr ptr_ = 0;
  Status status_;
};

}  // namespace

Status run_standalone(ops::KernelContext& kc) {
  const auto* l = static_cast<const CudaLaunch*>(kc.state);
  const ops::NodeContext& ctx = *kc.node;
  const std::string where = fmt::format("node '{}' ({}): ", ctx.node_name, ctx.op);
  if (l == nullptr || l->dev == nullptr)
    return internal_error("{}cuda: kernel not prepared", where);
  const CudaDevice& dev = *l->dev;
  FRAME_RETURN_IF_ERROR(make_current(dev).with_prefix(where));
  std::vector<std::unique_ptr<DeviceBuffer>> ins;
  std::vector<CUdeviceptr> ptrs;
  for (size_t k = 0; k < l->in_bytes.size(); ++k) {
    if (l->in_bytes[k] == 0) {  // absent, or read on the host only
      ptrs.push_back(0);
      continue;
    }
    if (kc.inputs[k].nbytes() != l->in_bytes[k]) {
      return internal_error("{}input {} has {} bytes, the kernel reads {}", where, k,
                            kc.inputs[k].nbytes(), l->in_bytes[k]);
    }
    ins.push_back(std::make_unique<DeviceBuffer>(dev, l->in_bytes[k]));
    FRAME_RETURN_IF_ERROR(ins.back()->status().with_prefix(where));
    ptrs.push_back(ins.back()->get());
    if (l->in_bytes[k] > 0) {
      FRAME_RETURN_IF_ERROR(
          cu_check(dev,
                   dev.api->cuMemcpyHtoDAsync(ptrs.back(), kc.inputs[k].raw_data(), l->in_bytes[k],
                                              nullptr),
                   "copying an input to the device")
              .with_prefix(where));
    }
  }
  DeviceBuffer out(dev, l->out_bytes);
  FRAME_RETURN_IF_ERROR(out.status().with_prefix(where));
  DeviceBuffer workspace(dev, l->workspace_bytes);
  FRAME_RETURN_IF_ERROR(workspace.status().with_prefix(where));
  DeviceBuffer error(dev, sizeof(int32_t));
  FRAME_RETURN_IF_ERROR(error.status().with_prefix(where));
  FRAME_RETURN_IF_ERROR(cu_check(dev,
                                 dev.api->cuMemsetD8Async(error.get(), 0, sizeof(int32_t), nullptr),
                                 "cuMemsetD8Async")
                            .with_prefix(where));
  FRAME_RETURN_IF_ERROR(
      l->launch(nullptr, ptrs, out.get(), workspace.get(), error.get()).with_prefix(where));
  if (l->out_bytes > 0) {
    FRAME_RETURN_IF_ERROR(cu_check(dev,
                                   dev.api->cuMemcpyDtoHAsync(kc.outputs[0].raw_data(), out.get(),
                                                              l->out_bytes, nullptr),
                                   "copying the output to the host")
                              .with_prefix(where));
  }
  FRAME_RETURN_IF_ERROR(cu_check(dev, dev.api->cuStreamSynchronize(nullptr), "cuStreamSynchronize")
                            .with_prefix(where));
  if (!l->device_error) return Status();
  int32_t flag = 0;
  FRAME_RETURN_IF_ERROR(cu_check(dev, dev.api->cuMemcpyDtoH(&flag, error.get(), sizeof(flag)),
                                 "reading the error flag")
                            .with_prefix(where));
  return device_error_status(*l, flag, ptrs.at(l->error_input));
}

}  // namespace frame::backends::cuda
