//===- CApiSupport.h - The C boundary's shared checks (internal) -*- C++
//-*-===//
//
// What every lowbit.h entry point shares (CApi.cpp, CApiKv.cpp): errors as
// a status plus the thread's last-error message, no exception across the
// boundary (`guarded`), and the DLTensor checks whose messages name the
// argument, what was expected and what was given.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CAPI_CAPISUPPORT_H
#define LOWBIT_RUNTIME_CAPI_CAPISUPPORT_H

#include "lowbit/Jit.h"
#include "lowbit/lowbit.h"

#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

struct lowbit_jit {
  std::unique_ptr<lowbit::Jit> jit;
};

namespace lowbit::capi {

/// The message of this thread's last lowbit call (CApi.cpp).
extern thread_local std::string lastError;

inline lowbit_status statusOf(ErrorCode code) {
  switch (code) {
  case ErrorCode::InvalidArgument:
    return LOWBIT_ERROR_INVALID_ARGUMENT;
  case ErrorCode::LibraryNotFound:
    return LOWBIT_ERROR_LIBRARY_NOT_FOUND;
  case ErrorCode::SymbolNotFound:
    return LOWBIT_ERROR_SYMBOL_NOT_FOUND;
  case ErrorCode::NoDevice:
    return LOWBIT_ERROR_NO_DEVICE;
  case ErrorCode::CudaError:
    return LOWBIT_ERROR_CUDA;
  case ErrorCode::CompileFailed:
    return LOWBIT_ERROR_COMPILE_FAILED;
  case ErrorCode::LinkFailed:
    return LOWBIT_ERROR_LINK_FAILED;
  case ErrorCode::CacheMiss:
    return LOWBIT_ERROR_CACHE_MISS;
  case ErrorCode::CorruptEntry:
    return LOWBIT_ERROR_CORRUPT_ENTRY;
  case ErrorCode::Io:
    return LOWBIT_ERROR_IO;
  case ErrorCode::Unsupported:
    return LOWBIT_ERROR_UNSUPPORTED;
  }
  return LOWBIT_ERROR_INTERNAL;
}

inline Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

/// Runs `body` (returning Status) and reports its outcome the C way.
template <typename Body> lowbit_status guarded(Body &&body) {
  try {
    Status status = body();
    if (status.ok()) {
      lastError.clear();
      return LOWBIT_OK;
    }
    lastError = status.error().message;
    return statusOf(status.error().code);
  } catch (const std::bad_alloc &) {
    lastError = "out of memory";
    return LOWBIT_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception &exception) {
    lastError = std::string("internal error: ") + exception.what();
    return LOWBIT_ERROR_INTERNAL;
  } catch (...) {
    lastError = "internal error: unknown exception";
    return LOWBIT_ERROR_INTERNAL;
  }
}

inline Status requireNonNull(const void *pointer, const char *name) {
  if (!pointer)
    return invalid(std::string(name) + " is NULL");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// DLTensor checks
//===----------------------------------------------------------------------===//

/// A DLPack dtype in the words NumPy and PyTorch use: float32, complex64,
/// bool, float8_e4m3fn (every code of dlpack.h, so no caller sees a raw
/// code), x<lanes> for vector types.
inline std::string dtypeText(DLDataType dtype) {
  // Codes with a bit count in the name: the bits follow; the narrow float
  // formats name their width themselves.
  static constexpr std::pair<uint8_t, const char *> kSized[] = {
      {kDLInt, "int"},       {kDLUInt, "uint"},
      {kDLFloat, "float"},   {kDLOpaqueHandle, "opaque-handle"},
      {kDLBfloat, "bfloat"}, {kDLComplex, "complex"}};
  static constexpr std::pair<uint8_t, const char *> kNamed[] = {
      {kDLBool, "bool"},
      {kDLFloat8_e3m4, "float8_e3m4"},
      {kDLFloat8_e4m3, "float8_e4m3"},
      {kDLFloat8_e4m3b11fnuz, "float8_e4m3b11fnuz"},
      {kDLFloat8_e4m3fn, "float8_e4m3fn"},
      {kDLFloat8_e4m3fnuz, "float8_e4m3fnuz"},
      {kDLFloat8_e5m2, "float8_e5m2"},
      {kDLFloat8_e5m2fnuz, "float8_e5m2fnuz"},
      {kDLFloat8_e8m0fnu, "float8_e8m0fnu"},
      {kDLFloat6_e2m3fn, "float6_e2m3fn"},
      {kDLFloat6_e3m2fn, "float6_e3m2fn"},
      {kDLFloat4_e2m1fn, "float4_e2m1fn"}};
  std::string name;
  for (auto [code, text] : kSized)
    if (dtype.code == code)
      name = text + std::to_string(int(dtype.bits));
  for (auto [code, text] : kNamed)
    if (dtype.code == code)
      name = text;
  if (name.empty())
    name = "an unknown DLPack type (code " + std::to_string(int(dtype.code)) +
           ", " + std::to_string(int(dtype.bits)) + " bits)";
  if (dtype.lanes != 1)
    name += "x" + std::to_string(int(dtype.lanes));
  return name;
}

inline std::string shapeText(const int64_t *shape, int ndim) {
  std::string text = "[";
  for (int i = 0; i < ndim; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

inline bool sameDtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

inline constexpr DLDataType kFloat32{kDLFloat, 32, 1};
inline constexpr DLDataType kFloat16{kDLFloat, 16, 1};
inline constexpr DLDataType kBfloat16{kDLBfloat, 16, 1};
inline constexpr DLDataType kUint8{kDLUInt, 8, 1};
inline constexpr DLDataType kUint16{kDLUInt, 16, 1};
inline constexpr DLDataType kInt8{kDLInt, 8, 1};
inline constexpr DLDataType kInt32{kDLInt, 32, 1};

/// The DLPack dtype of a kernel parameter's element type.
inline DLDataType dtypeOfElement(ElementType element) {
  switch (element) {
  case ElementType::F32:
    return kFloat32;
  case ElementType::F16:
    return kFloat16;
  case ElementType::BF16:
    return kBfloat16;
  case ElementType::U8:
    return kUint8;
  case ElementType::I8:
    return kInt8;
  case ElementType::I32:
    return kInt32;
  }
  return kUint8;
}

/// Whether `given` may stand for `expected`: bytes are bytes, signed or
/// not (uint8 for int8 and int8 for uint8), and bf16 scales may come as uint16
/// bit patterns (NumPy has no bfloat16) when `bf16AsUint16`.
inline bool acceptsDtype(DLDataType expected, DLDataType given,
                         bool bf16AsUint16) {
  if (sameDtype(expected, given))
    return true;
  if ((sameDtype(expected, kUint8) && sameDtype(given, kInt8)) ||
      (sameDtype(expected, kInt8) && sameDtype(given, kUint8)))
    return true;
  return bf16AsUint16 && sameDtype(expected, kBfloat16) &&
         sameDtype(given, kUint16);
}

inline int64_t elementCount(const DLTensor &tensor) {
  int64_t count = 1;
  for (int i = 0; i < tensor.ndim; ++i)
    count *= tensor.shape[i];
  return count;
}

inline bool isHost(DLDeviceType type) {
  return type == kDLCPU || type == kDLCUDAHost;
}

/// Checks the fields every tensor must have right and describes `tensor`
/// as `what` in messages.
inline Status checkBasics(const DLTensor *tensor, const std::string &what) {
  if (!tensor)
    return invalid(what + " is NULL");
  if (tensor->ndim < 0 || tensor->ndim > 8)
    return invalid(what + " has ndim " + std::to_string(tensor->ndim));
  if (tensor->ndim > 0 && !tensor->shape)
    return invalid(what + " has a NULL shape");
  for (int i = 0; i < tensor->ndim; ++i)
    if (tensor->shape[i] < 0)
      return invalid(what + " has a negative size: " +
                     shapeText(tensor->shape, tensor->ndim));
  if (!tensor->data && elementCount(*tensor) > 0)
    return invalid(what + " has NULL data");
  return Status::success();
}

inline char *dataOf(const DLTensor &tensor) {
  return static_cast<char *>(tensor.data) + tensor.byte_offset;
}

} // namespace lowbit::capi

#endif // LOWBIT_RUNTIME_CAPI_CAPISUPPORT_H
