//===- Expected.h - Errors as values for the MLIR-free runtime --*- C++ -*-===//
//
// The runtime core (cache, driver loader, NVRTC) must not link LLVM, so it
// cannot use llvm::Expected. This is the small replacement: a value or an
// Error with a code (for callers and tests that branch on the kind of
// failure) and a message written for a person. Nothing in the runtime
// throws for control flow or exits; only a tool's main() turns an Error
// into an exit code.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_EXPECTED_H
#define LOWBIT_EXPECTED_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace lowbit {

enum class ErrorCode : uint8_t {
  InvalidArgument,
  /// A shared library (libcuda, NVRTC, nvJitLink) could not be loaded.
  LibraryNotFound,
  /// A library loaded but lacks a function lowbit needs (too old).
  SymbolNotFound,
  /// The driver loaded but there is no usable CUDA device.
  NoDevice,
  /// A CUDA driver call failed; the message has cuGetErrorString's text.
  CudaError,
  /// NVRTC, or an injected compiler, failed; the message has its log.
  CompileFailed,
  /// nvJitLink failed; the message has its error log.
  LinkFailed,
  /// LOWBIT_CACHE=must-hit and the kernel is in neither cache.
  CacheMiss,
  /// A disk cache entry failed validation (reported, never returned).
  CorruptEntry,
  /// A file system call failed.
  Io,
  Unsupported,
};

std::string_view errorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::InvalidArgument;
  std::string message;
};

inline Error makeError(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

/// A T or an Error. Check with ok() (or the bool conversion) before value().
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : storage(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return storage.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() & { return std::get<0>(storage); }
  const T &value() const & { return std::get<0>(storage); }
  T &&value() && { return std::get<0>(std::move(storage)); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }

  const Error &error() const { return std::get<1>(storage); }
  Error takeError() && { return std::get<1>(std::move(storage)); }

private:
  std::variant<T, Error> storage;
};

/// Success or an Error, for operations without a result.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : failure(std::move(error)) {}
  static Status success() { return Status(); }

  bool ok() const { return !failure.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error &error() const { return *failure; }
  Error takeError() && { return std::move(*failure); }

private:
  std::optional<Error> failure;
};

inline std::string_view errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::InvalidArgument:
    return "invalid-argument";
  case ErrorCode::LibraryNotFound:
    return "library-not-found";
  case ErrorCode::SymbolNotFound:
    return "symbol-not-found";
  case ErrorCode::NoDevice:
    return "no-device";
  case ErrorCode::CudaError:
    return "cuda-error";
  case ErrorCode::CompileFailed:
    return "compile-failed";
  case ErrorCode::LinkFailed:
    return "link-failed";
  case ErrorCode::CacheMiss:
    return "cache-miss";
  case ErrorCode::CorruptEntry:
    return "corrupt-entry";
  case ErrorCode::Io:
    return "io";
  case ErrorCode::Unsupported:
    return "unsupported";
  }
  return "unknown";
}

} // namespace lowbit

#endif // LOWBIT_EXPECTED_H
