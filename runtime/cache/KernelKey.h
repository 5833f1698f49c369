//===- KernelKey.h - What a compiled kernel is specialized on ---*- C++ -*-===//
//
// A kernel binary is valid only for the inputs it was specialized on. The
// key names all of them, in two parts:
//
// - KernelSignature: what is fixed when a kernel is declared (the canonical
//   spec text, the target chip and its features, the input dtype, which
//   sizes are specialized, the lowbit and LLVM versions, the hash of the
//   compiler's sources and the hash of the pass pipeline text). It is
//   serialized and hashed once, by prepareSignature().
// - The launch-time part, cheap to compute on every launch: the size values
//   that the signature specializes on, and the 16-byte alignment class of
//   each pointer (Triton's divisibility class: 16-byte aligned or not).
//
// A size whose policy is Dynamic never enters the key, so it never causes a
// recompile. The policy is documented in docs/runtime.md.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CACHE_KERNELKEY_H
#define LOWBIT_RUNTIME_CACHE_KERNELKEY_H

#include "lowbit/Expected.h"
#include "runtime/cache/Hash.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

namespace lowbit::runtime {

/// The version of lowbit that wrote a kernel (CMake's PROJECT_VERSION).
std::string_view lowbitVersion();

/// 32 hex digits: a hash of the compiler's sources (format model, dialect,
/// passes, tails, compiler driver, spec parser, JIT, kernel templates),
/// computed by the build (runtime/cache/HashCompilerSources.cmake). Two
/// builds that could compile a spec differently never share a key.
std::string_view compilerBuildHash();

/// How one size (rows or cols) enters the key.
enum class SizePolicy : uint8_t {
  /// Not in the key: any value runs the same binary.
  Dynamic,
  /// The value is in the key: each value has its own binary.
  Static,
  /// Only "divisible by 16 or not" is in the key (Triton's rule), so a
  /// compiler may drop tail handling for the divisible case.
  Divisible16,
};
std::string_view sizePolicyName(SizePolicy policy);

/// Everything fixed when a kernel is declared.
struct KernelSignature {
  /// The canonical one-line spec (runtime/spec's printer), e.g.
  /// "quantize mxfp4 from=bf16 scale=dynamic dynamic".
  std::string spec;
  /// "sm_90a", "sm_89", ... or "host" for the CPU backend.
  std::string chip;
  /// Target features: "+ptx86" for NVPTX, the host CPU's features for CPU.
  std::string features;
  /// "f32", "f16" or "bf16".
  std::string inputDtype;
  SizePolicy rowsPolicy = SizePolicy::Dynamic;
  SizePolicy colsPolicy = SizePolicy::Dynamic;
  /// Number of pointer arguments whose alignment class is in the key (the
  /// first pointerCount pointers given to makeKernelKey), at most 32.
  int pointerCount = 0;
  /// Defaults to this build's version; a test may set another.
  std::string lowbitVersion = std::string(runtime::lowbitVersion());
  /// Defaults to this build's compilerBuildHash(); a test may set another.
  std::string compilerBuild = std::string(runtime::compilerBuildHash());
  /// The compiler's LLVM version ("22.1.8"); "nvrtc-13.0" for NVRTC.
  std::string llvmVersion;
  /// Hash of the pass pipeline text and options, from the compiler.
  uint64_t pipelineHash = 0;

  bool operator==(const KernelSignature &other) const = default;
  /// Stable text form, one `name=value` per line (see docs/runtime.md).
  std::string serialize() const;
};

/// A signature with its serialization and hash, computed once.
class PreparedSignature {
public:
  const KernelSignature &signature() const { return fields; }
  const std::string &serialized() const { return text; }
  const Hash128 &hash() const { return textHash; }

private:
  friend Expected<std::shared_ptr<const PreparedSignature>>
  prepareSignature(KernelSignature signature);
  KernelSignature fields;
  std::string text;
  Hash128 textHash;
};

/// Validates the signature (non-empty spec and chip, one-line fields, at
/// most 32 pointers) and computes its serialization and hash.
Expected<std::shared_ptr<const PreparedSignature>>
prepareSignature(KernelSignature signature);

/// kDynamicSize in a key means "this size is not specialized".
inline constexpr int64_t kDynamicSize = -1;

/// The full key: a prepared signature plus the launch-time specialization.
class KernelKey {
public:
  KernelKey() = default;

  const PreparedSignature &prepared() const { return *signaturePtr; }
  const KernelSignature &signature() const { return signaturePtr->signature(); }
  /// The specialized size, or kDynamicSize (Dynamic and Divisible16).
  int64_t rows() const { return rowsValue; }
  int64_t cols() const { return colsValue; }
  /// Divisible16 only: whether the size is a multiple of 16.
  bool rowsDivisibleBy16() const { return flags & kRowsDivisible; }
  bool colsDivisibleBy16() const { return flags & kColsDivisible; }
  /// Bit i set: pointer i is 16-byte aligned.
  uint32_t alignedPointerMask() const { return alignedMask; }
  const Hash128 &hash() const { return keyHash; }

  /// The signature's text plus the launch-time lines; the receipt of a
  /// disk entry holds exactly this.
  std::string serialize() const;

  bool operator==(const KernelKey &other) const;

private:
  friend KernelKey makeKernelKey(std::shared_ptr<const PreparedSignature>,
                                 int64_t, int64_t,
                                 std::span<const void *const>);
  static constexpr uint32_t kRowsDivisible = 1, kColsDivisible = 2;
  std::shared_ptr<const PreparedSignature> signaturePtr;
  int64_t rowsValue = kDynamicSize, colsValue = kDynamicSize;
  uint32_t flags = 0;
  uint32_t alignedMask = 0;
  Hash128 keyHash;
};

/// The launch path's key: no allocation, no string work. `pointers` holds
/// at least signature.pointerCount pointers (extra ones are ignored).
KernelKey makeKernelKey(std::shared_ptr<const PreparedSignature> signature,
                        int64_t rows, int64_t cols,
                        std::span<const void *const> pointers);
inline KernelKey
makeKernelKey(std::shared_ptr<const PreparedSignature> signature, int64_t rows,
              int64_t cols, std::initializer_list<const void *> pointers) {
  return makeKernelKey(
      std::move(signature), rows, cols,
      std::span<const void *const>(pointers.begin(), pointers.size()));
}

struct KernelKeyHasher {
  size_t operator()(const KernelKey &key) const { return key.hash().low; }
};

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CACHE_KERNELKEY_H
