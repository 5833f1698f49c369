//===- CApiKv.cpp - lowbit.h's KV-cache kernels over lowbit::Jit::getKv ---===//
//
// The DLTensors become lowbit::KvTensor after the C boundary's own checks
// (device, dtype, compact row-major strides); KvKernel::run/launch check
// the shapes against the kernel ABI, so a message names the buffer.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiSupport.h"

#include <array>
#include <memory>
#include <vector>

struct lowbit_kv_kernel {
  lowbit::KvKernel kernel;
  /// The names of each parameter's dimensions, for lowbit_kv_param_info.
  std::vector<std::array<const char *, LOWBIT_KV_MAX_RANK>> dimNames;
};

namespace {

using namespace lowbit;
using namespace lowbit::capi;

/// Checks `args` on `device` against the kernel's parameters' dtypes and
/// ranks and returns them as KvTensors (the shapes are checked by run()
/// and launch()).
Expected<std::vector<KvTensor>> kvTensors(const lowbit_kv_kernel *kernel,
                                          const DLTensor *args, size_t count,
                                          DLDeviceType device) {
  if (!kernel)
    return invalid("kernel is NULL");
  if (!args && count)
    return invalid("args is NULL");
  const std::vector<KvParamInfo> &params = kernel->kernel.params();
  if (count != params.size())
    return invalid(std::string(kernel->kernel.op()) + " takes " +
                   std::to_string(params.size()) + " arguments, got " +
                   std::to_string(count));
  std::vector<KvTensor> tensors;
  for (size_t i = 0; i < count; ++i) {
    const DLTensor &tensor = args[i];
    const KvParamInfo &param = params[i];
    std::string what =
        "argument " + std::to_string(i) + " (" + param.name + ")";
    if (Status basics = checkBasics(&tensor, what); !basics)
      return basics.error();
    if (tensor.device.device_type != device)
      return invalid(what + " is on DLPack device type " +
                     std::to_string(int(tensor.device.device_type)) +
                     (device == kDLCPU
                          ? "; lowbit_kv_kernel_run takes kDLCPU tensors"
                          : "; lowbit_kv_kernel_launch takes kDLCUDA tensors"));
    if (device == kDLCUDA && tensor.device.device_id != 0)
      return makeError(ErrorCode::Unsupported,
                       what + " is on CUDA device " +
                           std::to_string(tensor.device.device_id) +
                           "; lowbit launches on device 0 only");
    DLDataType expected = dtypeOfElement(param.element);
    if (!acceptsDtype(expected, tensor.dtype, /*bf16AsUint16=*/false))
      return invalid(what + " has dtype " + dtypeText(tensor.dtype) +
                     ", expected " + dtypeText(expected));
    if (tensor.strides) {
      int64_t compact = 1;
      for (int d = tensor.ndim - 1; d >= 0; --d) {
        if (tensor.shape[d] > 1 && tensor.strides[d] != compact)
          return invalid(what + " has strides " +
                         shapeText(tensor.strides, tensor.ndim) +
                         "; kernels take compact row-major tensors");
        compact *= tensor.shape[d];
      }
    }
    KvTensor converted;
    converted.data = dataOf(tensor);
    converted.element = param.element;
    converted.rank = size_t(tensor.ndim);
    for (int d = 0; d < tensor.ndim; ++d)
      converted.shape[size_t(d)] = tensor.shape[d];
    tensors.push_back(converted);
  }
  return tensors;
}

} // namespace

extern "C" {

lowbit_status lowbit_jit_get_kv(lowbit_jit *jit, const char *spec,
                                const char *target, lowbit_kv_kernel **kernel) {
  return guarded([&]() -> Status {
    for (auto [pointer, name] :
         {std::pair<const void *, const char *>{jit, "jit"},
          {spec, "spec"},
          {target, "target"},
          {kernel, "kernel"}})
      if (Status status = requireNonNull(pointer, name); !status)
        return status;
    std::string error;
    std::optional<Target> parsed = parseTarget(target, &error);
    if (!parsed)
      return invalid("target '" + std::string(target) + "': " + error);
    Expected<KvKernel> got = jit->jit->getKv(spec, *parsed);
    if (!got)
      return std::move(got).takeError();
    auto made = std::make_unique<lowbit_kv_kernel>(lowbit_kv_kernel{*got, {}});
    for (const KvParamInfo &param : got->params()) {
      std::array<const char *, LOWBIT_KV_MAX_RANK> names{};
      for (size_t d = 0; d < names.size(); ++d)
        names[d] =
            d < param.shape.size() ? kvDimName(param.shape[d]).data() : "";
      made->dimNames.push_back(names);
    }
    *kernel = made.release();
    return Status::success();
  });
}

void lowbit_kv_kernel_destroy(lowbit_kv_kernel *kernel) { delete kernel; }

size_t lowbit_kv_kernel_param_count(const lowbit_kv_kernel *kernel) {
  return kernel ? kernel->kernel.params().size() : 0;
}

lowbit_status lowbit_kv_kernel_param(const lowbit_kv_kernel *kernel,
                                     size_t index, lowbit_kv_param_info *info) {
  return guarded([&]() -> Status {
    if (Status status = requireNonNull(kernel, "kernel"); !status)
      return status;
    if (Status status = requireNonNull(info, "info"); !status)
      return status;
    const std::vector<KvParamInfo> &params = kernel->kernel.params();
    if (index >= params.size())
      return invalid("parameter " + std::to_string(index) + " of " +
                     std::to_string(params.size()));
    const KvParamInfo &param = params[index];
    lowbit_kv_param_info out{};
    out.name = param.name.c_str();
    out.dtype = dtypeOfElement(param.element);
    out.is_output = param.written ? 1 : 0;
    out.ndim = int32_t(param.shape.size());
    for (size_t d = 0; d < LOWBIT_KV_MAX_RANK; ++d) {
      out.shape[d] = d < param.shape.size() ? param.shape[d] : 0;
      out.dim_names[d] = kernel->dimNames[index][d];
    }
    *info = out;
    return Status::success();
  });
}

const char *lowbit_kv_kernel_spec(const lowbit_kv_kernel *kernel) {
  return kernel ? kernel->kernel.spec().c_str() : "";
}

const char *lowbit_kv_kernel_ptx(const lowbit_kv_kernel *kernel) {
  // The state holds the PTX in a std::string: its data() is terminated.
  return kernel ? kernel->kernel.ptx().data() : "";
}

lowbit_status lowbit_kv_kernel_run(const lowbit_kv_kernel *kernel,
                                   const DLTensor *args, size_t arg_count) {
  return guarded([&]() -> Status {
    Expected<std::vector<KvTensor>> tensors =
        kvTensors(kernel, args, arg_count, kDLCPU);
    if (!tensors)
      return std::move(tensors).takeError();
    return kernel->kernel.run(*tensors);
  });
}

lowbit_status lowbit_kv_kernel_launch(const lowbit_kv_kernel *kernel,
                                      void *stream, const DLTensor *args,
                                      size_t arg_count) {
  return guarded([&]() -> Status {
    Expected<std::vector<KvTensor>> tensors =
        kvTensors(kernel, args, arg_count, kDLCUDA);
    if (!tensors)
      return std::move(tensors).takeError();
    return kernel->kernel.launch(stream, *tensors);
  });
}

} // extern "C"
