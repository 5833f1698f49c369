//===- CApi.cpp - lowbit.h over lowbit::Jit and the reference quantizer ---===//
//
// Every entry point runs its body through `guarded`, which turns an
// lowbit::Error into a status and the thread's last-error message, and a
// stray C++ exception into OUT_OF_MEMORY or INTERNAL: no exception crosses
// the C boundary. DLTensors are checked here, argument by argument, so a
// message names the argument, what was expected and what was given.
//
//===----------------------------------------------------------------------===//

#include "lowbit/lowbit.h"

#include "format/Quantize.h"
#include "lowbit/Jit.h"
#include "runtime/capi/CApiSupport.h"
#include "runtime/jit/ArgumentShapes.h"

#include <array>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

// The kernel's parameters come from the MLIR-free kernel ABI
// (Kernel::signature, runtime/spec/KernelAbi.h): lowbit.h links
// LowbitJitLoader, so a process whose kernels come from the disk cache
// never loads libMLIR or libLLVM (docs/embedding.md).
struct lowbit_kernel {
  lowbit::Kernel kernel;
  std::string specText;
};

namespace lowbit::capi {
thread_local std::string lastError;
} // namespace lowbit::capi

namespace {

using namespace lowbit;
using namespace lowbit::capi;

/// Checks a tensor's dtype and its shape [rows, cols] (any one-element
/// tensor for [1, 1]).
Status checkDtypeAndShape(const DLTensor *tensor, const std::string &what,
                          DLDataType expected, bool bf16AsUint16,
                          Shape2D shape) {
  if (!acceptsDtype(expected, tensor->dtype, bf16AsUint16))
    return invalid(what + " has dtype " + dtypeText(tensor->dtype) +
                   ", expected " + dtypeText(expected));
  if (shape.rows == 1 && shape.cols == 1 && elementCount(*tensor) == 1)
    return Status::success();
  if (tensor->ndim != 2 || tensor->shape[0] != shape.rows ||
      tensor->shape[1] != shape.cols)
    return invalid(what + " has shape " +
                   shapeText(tensor->shape, tensor->ndim) + ", expected [" +
                   std::to_string(shape.rows) + ", " +
                   std::to_string(shape.cols) + "]");
  return Status::success();
}

/// Checks a kernel argument: device, dtype, shape [rows, cols] (any
/// one-element tensor for [1, 1]) and compact row-major strides.
Status checkKernelArg(const DLTensor *tensor, size_t index,
                      const ArgumentInfo &argument, DLDeviceType device) {
  Shape2D shape{argument.shape[0], argument.shape[1]};
  std::string what = "argument " + std::to_string(index) + " (" +
                     std::string(argumentRoleName(argument.role)) + ")";
  if (Status basics = checkBasics(tensor, what); !basics)
    return basics;
  if (tensor->device.device_type != device)
    return invalid(what + " is on DLPack device type " +
                   std::to_string(int(tensor->device.device_type)) +
                   (device == kDLCPU
                        ? "; lowbit_kernel_run takes kDLCPU tensors (use "
                          "lowbit_kernel_launch for CUDA tensors)"
                        : "; lowbit_kernel_launch takes kDLCUDA tensors (use "
                          "lowbit_kernel_run for host tensors)"));
  if (Status checked = checkDtypeAndShape(
          tensor, what, dtypeOfElement(argument.element),
          /*bf16AsUint16=*/argument.role == ArgumentRole::Scales, shape);
      !checked)
    return checked;
  // Reads no stride of a [1, 1] argument, whatever its rank.
  if (tensor->strides &&
      ((shape.rows > 1 && tensor->strides[0] != shape.cols) ||
       (shape.cols > 1 && tensor->strides[1] != 1)))
    return invalid(what + " has strides " + shapeText(tensor->strides, 2) +
                   "; kernels take compact row-major tensors");
  return Status::success();
}

/// Checks `args` against `kernel`'s parameters and returns each one's
/// address; rows and cols come from the input (quantize) or the output
/// (dequantize).
Expected<std::vector<char *>> kernelArgs(const lowbit_kernel *kernel,
                                         const DLTensor *args, size_t count,
                                         DLDeviceType device, int64_t &rows,
                                         int64_t &cols) {
  if (!kernel)
    return invalid("kernel is NULL");
  if (!args && count)
    return invalid("args is NULL");
  if (count != kernel->kernel.bufferCount())
    return invalid("the kernel takes " +
                   std::to_string(kernel->kernel.bufferCount()) +
                   " arguments, got " + std::to_string(count));
  size_t sizer = kernel->kernel.spec().op == KernelOp::Quantize ? 0 : count - 1;
  const DLTensor &sizing = args[sizer];
  std::string what = "argument " + std::to_string(sizer);
  if (Status basics = checkBasics(&sizing, what); !basics)
    return basics.error();
  if (sizing.ndim != 2)
    return invalid(what + " has shape " + shapeText(sizing.shape, sizing.ndim) +
                   "; kernels take 2-D [rows, cols] tensors");
  rows = sizing.shape[0];
  cols = sizing.shape[1];
  // A fused quantize's input may be wider than the quantized tensor
  // (silu_mul reads 2 * cols): the kernel's sizes are the quantized ones.
  std::optional<int64_t> quantized =
      jit::quantizedCols(kernel->kernel.spec(), cols);
  if (!quantized)
    return invalid(what + " has " + std::to_string(cols) +
                   " columns; this kernel's input has an even count (silu_mul "
                   "reads the gate and up halves of each row)");
  cols = *quantized;
  // Kernel::signature asks the format model (no MLIR on this path).
  Expected<std::vector<ArgumentInfo>> signature =
      kernel->kernel.signature(rows, cols);
  if (!signature)
    return signature.error();
  std::vector<char *> pointers;
  for (size_t i = 0; i < count; ++i) {
    if (Status status = checkKernelArg(&args[i], i, (*signature)[i], device);
        !status)
      return status.error();
    pointers.push_back(dataOf(args[i]));
  }
  return pointers;
}

//===----------------------------------------------------------------------===//
// Strided host tensors for the reference quantizer
//===----------------------------------------------------------------------===//

/// Calls `visit(byteOffset)` for each element of `tensor` in C order.
template <typename Visit>
void forEachElement(const DLTensor &tensor, Visit visit) {
  int64_t count = elementCount(tensor);
  if (count == 0)
    return;
  size_t itemBytes = (tensor.dtype.bits * tensor.dtype.lanes + 7) / 8;
  std::array<int64_t, 8> index{};
  std::array<int64_t, 8> strides{};
  int64_t compact = 1;
  for (int d = tensor.ndim - 1; d >= 0; --d) {
    strides[d] = tensor.strides ? tensor.strides[d] : compact;
    compact *= tensor.shape[d];
  }
  for (int64_t n = 0; n < count; ++n) {
    int64_t offset = 0;
    for (int d = 0; d < tensor.ndim; ++d)
      offset += index[d] * strides[d];
    visit(offset * int64_t(itemBytes));
    for (int d = tensor.ndim - 1; d >= 0; --d) {
      if (++index[d] < tensor.shape[d])
        break;
      index[d] = 0;
    }
  }
}

template <typename T> std::vector<T> gather(const DLTensor &tensor) {
  std::vector<T> values;
  values.reserve(size_t(elementCount(tensor)));
  const char *base = dataOf(tensor);
  forEachElement(tensor, [&](int64_t offset) {
    T value;
    std::memcpy(&value, base + offset, sizeof(T));
    values.push_back(value);
  });
  return values;
}

template <typename T>
void scatter(const DLTensor &tensor, const std::vector<T> &values) {
  char *base = dataOf(tensor);
  size_t n = 0;
  forEachElement(tensor, [&](int64_t offset) {
    std::memcpy(base + offset, &values[n++], sizeof(T));
  });
}

/// A host tensor of one of `dtypes` with `shape` (any one-element tensor
/// for [1, 1]).
Status checkHostTensor(const DLTensor *tensor, const std::string &what,
                       DLDataType expected, bool bf16AsUint16, Shape2D shape) {
  if (Status basics = checkBasics(tensor, what); !basics)
    return basics;
  if (!isHost(tensor->device.device_type))
    return makeError(ErrorCode::Unsupported,
                     what + " is on DLPack device type " +
                         std::to_string(int(tensor->device.device_type)) +
                         ": lowbit_quantize and lowbit_dequantize run the "
                         "reference quantizer on host tensors; device tensors "
                         "are not supported yet (use a JIT kernel: "
                         "lowbit_jit_get and lowbit_kernel_launch)");
  return checkDtypeAndShape(tensor, what, expected, bf16AsUint16, shape);
}

/// A value tensor (quantize's input, dequantize's output): float32,
/// float16 or bfloat16 on the host, viewed as [leading product, last].
Status checkValueTensor(const DLTensor *tensor, const std::string &what,
                        int64_t &rows, int64_t &cols) {
  if (Status basics = checkBasics(tensor, what); !basics)
    return basics;
  if (!isHost(tensor->device.device_type))
    return checkHostTensor(tensor, what, kFloat32, false, {});
  if (!sameDtype(tensor->dtype, kFloat32) &&
      !sameDtype(tensor->dtype, kFloat16) &&
      !sameDtype(tensor->dtype, kBfloat16))
    return invalid(what + " has dtype " + dtypeText(tensor->dtype) +
                   ", expected float32, float16 or bfloat16");
  if (tensor->ndim < 1)
    return invalid(what + " is 0-D; lowbit quantizes [rows, cols] tensors");
  cols = tensor->shape[tensor->ndim - 1];
  rows = 1;
  for (int i = 0; i + 1 < tensor->ndim; ++i)
    rows *= tensor->shape[i];
  return Status::success();
}

Expected<Scheme> schemeOf(const char *text) {
  if (!text)
    return invalid("scheme is NULL");
  std::string error;
  std::optional<Scheme> scheme = parseSchemeText(text, &error);
  if (!scheme)
    return invalid("scheme '" + std::string(text) + "': " + error);
  if (!validateScheme(*scheme, &error))
    return invalid("scheme '" + std::string(text) + "': " + error);
  return *scheme;
}

DLDataType scalesDtype(ScaleType type) {
  switch (type) {
  case ScaleType::F32:
    return kFloat32;
  case ScaleType::F16:
    return kFloat16;
  case ScaleType::BF16:
    return kBfloat16;
  case ScaleType::E8M0:
  case ScaleType::UE4M3:
    return kUint8;
  }
  return kUint8;
}

bool hasZeros(const Scheme &scheme) { return scheme.scale.zeroPoint; }
bool hasGlobal(const Scheme &scheme) {
  return scheme.scale.globalScale != GlobalScale::None;
}

/// Scale codes from a tensor of the scheme's scale dtype.
std::vector<uint32_t> gatherScaleCodes(const DLTensor &tensor, ScaleType type) {
  std::vector<uint32_t> codes;
  if (scaleStorageBits(type) == 32)
    return gather<uint32_t>(tensor);
  if (scaleStorageBits(type) == 16)
    for (uint16_t code : gather<uint16_t>(tensor))
      codes.push_back(code);
  else
    for (uint8_t code : gather<uint8_t>(tensor))
      codes.push_back(code);
  return codes;
}

void scatterScaleCodes(const DLTensor &tensor, ScaleType type,
                       const std::vector<uint32_t> &codes) {
  if (scaleStorageBits(type) == 32)
    return scatter(tensor, codes);
  if (scaleStorageBits(type) == 16)
    return scatter(tensor, std::vector<uint16_t>(codes.begin(), codes.end()));
  scatter(tensor, std::vector<uint8_t>(codes.begin(), codes.end()));
}

float gatherGlobal(const DLTensor &tensor) { return gather<float>(tensor)[0]; }

/// Checks the parts of a quantized tensor: codes, scales, zeros, global.
Status checkQuantizedParts(const Scheme &scheme, int64_t rows, int64_t cols,
                           const DLTensor *codes, const DLTensor *scales,
                           const DLTensor *zeros, const DLTensor *global) {
  Shape2D scaled = scaleShape(scheme, rows, cols);
  if (Status status = checkHostTensor(codes, "codes", kUint8, false,
                                      codesShape(scheme, rows, cols));
      !status)
    return status;
  if (Status status = checkHostTensor(
          scales, "scales", scalesDtype(scheme.scale.type), true, scaled);
      !status)
    return status;
  if (hasZeros(scheme)) {
    if (Status status = checkHostTensor(zeros, "zeros", kUint8, false, scaled);
        !status)
      return status;
  } else if (zeros) {
    return invalid("zeros given, but the scheme has no zero point");
  }
  if (hasGlobal(scheme)) {
    if (Status status =
            checkHostTensor(global, "global_scale", kFloat32, false, {1, 1});
        !status)
      return status;
  } else if (global) {
    return invalid("global_scale given, but the scheme has no global scale");
  }
  return Status::success();
}

/// The checks of lowbit_quantize and lowbit_dequantize: the value tensor
/// (which gives rows and cols), the scheme for that shape, and the parts.
Status checkQuantizedCall(const Scheme &scheme, const DLTensor *values,
                          const std::string &valuesName, const DLTensor *codes,
                          const DLTensor *scales, const DLTensor *zeros,
                          const DLTensor *global, int64_t &rows,
                          int64_t &cols) {
  if (Status status = checkValueTensor(values, valuesName, rows, cols); !status)
    return status;
  std::string error;
  if (!validateSchemeForShape(scheme, rows, cols, &error))
    return invalid(error);
  return checkQuantizedParts(scheme, rows, cols, codes, scales, zeros, global);
}

} // namespace

//===----------------------------------------------------------------------===//
// Errors and names
//===----------------------------------------------------------------------===//

extern "C" {

const char *lowbit_status_name(lowbit_status status) {
  // A C caller may pass any int ("unknown" for a value not listed), but in
  // C++ a value outside the enumerators' range (0..15) may not be read as
  // the enum: UBSan reported 999 (the sanitizer build). Compare the bits.
  std::underlying_type_t<lowbit_status> value;
  std::memcpy(&value, &status, sizeof value);
  switch (value) {
  case LOWBIT_OK:
    return "ok";
  case LOWBIT_ERROR_OUT_OF_MEMORY:
    return "out-of-memory";
  case LOWBIT_ERROR_INTERNAL:
    return "internal";
  default:
    break;
  }
  for (int code = 0; code <= int(ErrorCode::Unsupported); ++code)
    if (statusOf(ErrorCode(code)) == value)
      return errorCodeName(ErrorCode(code)).data();
  return "unknown";
}

const char *lowbit_last_error(void) { return lastError.c_str(); }

const char *lowbit_version(void) { return runtime::lowbitVersion().data(); }

const char *lowbit_scheme_name(size_t index) {
  const std::vector<Scheme> &schemes = namedSchemes();
  return index < schemes.size() ? schemes[index].name.c_str() : nullptr;
}

const char *lowbit_format_name(size_t index) {
  const std::vector<Format> &formats = namedFormats();
  return index < formats.size() ? formats[index].name().c_str() : nullptr;
}

//===----------------------------------------------------------------------===//
// Jit and kernels
//===----------------------------------------------------------------------===//

lowbit_status lowbit_jit_create(const lowbit_jit_options *options,
                                lowbit_jit **jit) {
  return guarded([&]() -> Status {
    if (Status status = requireNonNull(jit, "jit"); !status)
      return status;
    JitOptions jitOptions;
    if (options && options->cache_directory)
      jitOptions.cacheDirectory = options->cache_directory;
    if (options && options->cache_mode) {
      std::string_view name = options->cache_mode;
      for (auto mode :
           {runtime::CacheMode::ReadWrite, runtime::CacheMode::ReadOnly,
            runtime::CacheMode::Off, runtime::CacheMode::MustHit})
        if (runtime::cacheModeName(mode) == name)
          jitOptions.cacheMode = mode;
      if (!jitOptions.cacheMode)
        return invalid("cache_mode '" + std::string(name) +
                       "': expected on, readonly, off or must-hit");
    }
    if (options && options->memory_capacity)
      jitOptions.memoryCapacity = options->memory_capacity;
    Expected<std::unique_ptr<Jit>> created = Jit::create(jitOptions);
    if (!created)
      return std::move(created).takeError();
    *jit = new lowbit_jit{std::move(*created)};
    return Status::success();
  });
}

void lowbit_jit_destroy(lowbit_jit *jit) { delete jit; }

lowbit_status lowbit_jit_get(lowbit_jit *jit, const char *spec,
                             const char *target, lowbit_kernel **kernel) {
  return guarded([&]() -> Status {
    if (Status status = requireNonNull(jit, "jit"); !status)
      return status;
    if (Status status = requireNonNull(spec, "spec"); !status)
      return status;
    if (Status status = requireNonNull(target, "target"); !status)
      return status;
    if (Status status = requireNonNull(kernel, "kernel"); !status)
      return status;
    std::string error;
    std::optional<Target> parsed = parseTarget(target, &error);
    if (!parsed)
      return invalid("target '" + std::string(target) + "': " + error);
    Expected<Kernel> got = jit->jit->get(spec, *parsed);
    if (!got)
      return std::move(got).takeError();
    *kernel = new lowbit_kernel{*got, printKernelSpec(got->spec())};
    return Status::success();
  });
}

void lowbit_kernel_destroy(lowbit_kernel *kernel) { delete kernel; }

size_t lowbit_kernel_arg_count(const lowbit_kernel *kernel) {
  return kernel ? kernel->kernel.bufferCount() : 0;
}

lowbit_status lowbit_kernel_arg(const lowbit_kernel *kernel, size_t index,
                                int64_t rows, int64_t cols,
                                lowbit_arg_info *info) {
  return guarded([&]() -> Status {
    if (Status status = requireNonNull(kernel, "kernel"); !status)
      return status;
    if (Status status = requireNonNull(info, "info"); !status)
      return status;
    if (index >= kernel->kernel.bufferCount())
      return invalid(
          "argument " + std::to_string(index) + ": the kernel takes " +
          std::to_string(kernel->kernel.bufferCount()) + " arguments");
    // The C form of Kernel::signature (same roles, in the same order).
    Expected<std::vector<ArgumentInfo>> signature =
        kernel->kernel.signature(rows, cols);
    if (!signature)
      return std::move(signature).takeError();
    const ArgumentInfo &argument = (*signature)[index];
    info->role = lowbit_arg_role(int(argument.role));
    info->is_output = argument.written;
    info->dtype = dtypeOfElement(argument.element);
    info->shape[0] = argument.shape[0];
    info->shape[1] = argument.shape[1];
    return Status::success();
  });
}

const char *lowbit_kernel_spec(const lowbit_kernel *kernel) {
  return kernel ? kernel->specText.c_str() : "";
}

const char *lowbit_kernel_ptx(const lowbit_kernel *kernel) {
  return kernel ? kernel->kernel.ptx().data() : "";
}

lowbit_status lowbit_kernel_run(const lowbit_kernel *kernel,
                                const DLTensor *args, size_t arg_count) {
  return guarded([&]() -> Status {
    int64_t rows = 0, cols = 0;
    Expected<std::vector<char *>> pointers =
        kernelArgs(kernel, args, arg_count, kDLCPU, rows, cols);
    if (!pointers)
      return std::move(pointers).takeError();
    std::vector<void *> buffers(pointers->begin(), pointers->end());
    return kernel->kernel.run(buffers, rows, cols);
  });
}

lowbit_status lowbit_kernel_launch(const lowbit_kernel *kernel, void *stream,
                                   const DLTensor *args, size_t arg_count) {
  return guarded([&]() -> Status {
    int64_t rows = 0, cols = 0;
    Expected<std::vector<char *>> pointers =
        kernelArgs(kernel, args, arg_count, kDLCUDA, rows, cols);
    if (!pointers)
      return std::move(pointers).takeError();
    for (size_t i = 0; i < arg_count; ++i)
      if (args[i].device.device_id != 0)
        return makeError(
            ErrorCode::Unsupported,
            "argument " + std::to_string(i) +
                " is on CUDA "
                "device " +
                std::to_string(args[i].device.device_id) +
                "; lowbit launches on device 0 (its primary context) "
                "only");
    std::vector<uint64_t> buffers;
    for (char *pointer : *pointers)
      buffers.push_back(uint64_t(reinterpret_cast<uintptr_t>(pointer)));
    return kernel->kernel.launch(stream, buffers, rows, cols);
  });
}

//===----------------------------------------------------------------------===//
// The reference quantizer
//===----------------------------------------------------------------------===//

lowbit_status lowbit_quantized_layout_of(const char *scheme, int64_t rows,
                                         int64_t cols,
                                         lowbit_quantized_layout *layout) {
  return guarded([&]() -> Status {
    if (Status status = requireNonNull(layout, "layout"); !status)
      return status;
    Expected<Scheme> parsed = schemeOf(scheme);
    if (!parsed)
      return std::move(parsed).takeError();
    if (rows < 0 || cols < 0)
      return invalid("negative size");
    std::string error;
    if (!validateSchemeForShape(*parsed, rows, cols, &error))
      return invalid(error);
    Shape2D codes = codesShape(*parsed, rows, cols);
    Shape2D scales = scaleShape(*parsed, rows, cols);
    *layout = lowbit_quantized_layout{{codes.rows, codes.cols},
                                      {scales.rows, scales.cols},
                                      scalesDtype(parsed->scale.type),
                                      hasZeros(*parsed),
                                      hasGlobal(*parsed)};
    return Status::success();
  });
}

lowbit_status lowbit_quantize(const char *scheme, const DLTensor *input,
                              const DLTensor *codes, const DLTensor *scales,
                              const DLTensor *zeros,
                              const DLTensor *global_scale, unsigned flags) {
  return guarded([&]() -> Status {
    Expected<Scheme> parsed = schemeOf(scheme);
    if (!parsed)
      return std::move(parsed).takeError();
    if (flags &
        ~unsigned(LOWBIT_QUANTIZE_STATIC_SCALES | LOWBIT_QUANTIZE_GIVEN_GLOBAL))
      return invalid("unknown flags " + std::to_string(flags));
    bool isStatic = flags & LOWBIT_QUANTIZE_STATIC_SCALES;
    bool givenGlobal = flags & LOWBIT_QUANTIZE_GIVEN_GLOBAL;
    if (givenGlobal && (isStatic || !hasGlobal(*parsed)))
      return invalid(isStatic ? "LOWBIT_QUANTIZE_GIVEN_GLOBAL is for dynamic "
                                "scales; static ones read the global scale"
                              : "LOWBIT_QUANTIZE_GIVEN_GLOBAL: the scheme has "
                                "no global scale");
    if (isStatic)
      parsed->scale.mode = ScaleMode::Static;
    int64_t rows = 0, cols = 0;
    if (Status status =
            checkQuantizedCall(*parsed, input, "input", codes, scales, zeros,
                               global_scale, rows, cols);
        !status)
      return status;
    std::string error;

    StaticScales given;
    if (isStatic) {
      given.scaleCodes = gatherScaleCodes(*scales, parsed->scale.type);
      if (hasZeros(*parsed))
        given.zeros = gather<uint8_t>(*zeros);
    }
    if (hasGlobal(*parsed) && (isStatic || givenGlobal))
      given.globalScale = gatherGlobal(*global_scale);

    std::optional<QuantizedTensor> result;
    if (sameDtype(input->dtype, kFloat32))
      result =
          quantize(*parsed, gather<float>(*input), rows, cols, given, &error);
    else
      result = quantizeHalf(
          *parsed,
          sameDtype(input->dtype, kFloat16) ? HalfType::F16 : HalfType::BF16,
          gather<uint16_t>(*input), rows, cols, given, &error);
    if (!result)
      return invalid(error);
    // Nothing is written before this point: a failure leaves the outputs
    // as they were.
    scatter(*codes, result->codes);
    if (!isStatic) {
      scatterScaleCodes(*scales, parsed->scale.type, result->scaleCodes);
      if (hasZeros(*parsed))
        scatter(*zeros, result->zeros);
      if (hasGlobal(*parsed) && !givenGlobal)
        scatter(*global_scale, std::vector<float>{result->globalScale});
    }
    return Status::success();
  });
}

lowbit_status lowbit_dequantize(const char *scheme, const DLTensor *codes,
                                const DLTensor *scales, const DLTensor *zeros,
                                const DLTensor *global_scale,
                                const DLTensor *output) {
  return guarded([&]() -> Status {
    Expected<Scheme> parsed = schemeOf(scheme);
    if (!parsed)
      return std::move(parsed).takeError();
    int64_t rows = 0, cols = 0;
    if (Status status =
            checkQuantizedCall(*parsed, output, "output", codes, scales, zeros,
                               global_scale, rows, cols);
        !status)
      return status;
    std::string error;
    QuantizedTensor tensor(*parsed);
    tensor.rows = rows;
    tensor.cols = cols;
    tensor.codes = gather<uint8_t>(*codes);
    tensor.scaleCodes = gatherScaleCodes(*scales, parsed->scale.type);
    if (hasZeros(*parsed))
      tensor.zeros = gather<uint8_t>(*zeros);
    if (hasGlobal(*parsed))
      tensor.globalScale = gatherGlobal(*global_scale);
    if (sameDtype(output->dtype, kFloat32)) {
      std::optional<std::vector<float>> values = dequantize(tensor, &error);
      if (!values)
        return invalid(error);
      scatter(*output, *values);
    } else {
      std::optional<std::vector<uint16_t>> values = dequantizeHalf(
          tensor,
          sameDtype(output->dtype, kFloat16) ? HalfType::F16 : HalfType::BF16,
          &error);
      if (!values)
        return invalid(error);
      scatter(*output, *values);
    }
    return Status::success();
  });
}

} // extern "C"
