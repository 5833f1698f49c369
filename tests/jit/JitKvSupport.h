//===- JitKvSupport.h - KV-cache test caches for lowbit::Jit::getKv -*- C++
//-*-===//
//
// A small KV-cache scenario shared by the KV tests of the Jit: the buffers
// of kv_append, kv_dequantize and kv_attend for one scheme and layout,
// with deterministic inputs (tests/reference's Random), as host byte
// vectors that both the Jit (KvTensor) and the compilers (KvBuffer,
// HostBuffer) take.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_JIT_JITKVSUPPORT_H
#define LOWBIT_TESTS_JIT_JITKVSUPPORT_H

#include "lowbit/Jit.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::testing {

/// One buffer: bytes, element type and C-order shape.
struct KvTestBuffer {
  std::vector<uint8_t> bytes;
  ElementType element = ElementType::F32;
  std::vector<int64_t> shape;

  static KvTestBuffer zeros(ElementType element, std::vector<int64_t> shape);
  template <typename T> T *as() { return reinterpret_cast<T *>(bytes.data()); }
  KvTensor tensor();
  /// The same bytes seen as [leading product, last] (kv_attend's 2-D view
  /// of a cache).
  KvTensor tensor2d();
};

/// batch 2, kv heads 2, q heads 4, head_dim 64, 5 new tokens appended at
/// positions {0, 3}; contiguous caches of 8 tokens, or 3 pages of 16
/// tokens with one block per sequence (sequence 0 on page 2, 1 on 0).
struct KvScenario {
  std::string scheme; ///< kv_int8_g32, kv_fp8_e4m3, ...
  bool paged = false;
  static constexpr int64_t kBatch = 2, kKvHeads = 2, kQHeads = 4, kHeadDim = 64,
                           kNewTokens = 5;

  std::string appendSpec() const;
  std::string dequantizeSpec() const;
  std::string attendSpec() const;

  /// Cache capacity per sequence (8 or 16 x max blocks).
  int64_t maxTokens() const;
  std::vector<int64_t> cacheShape() const;  ///< [B|P, H, T|16, D]
  std::vector<int64_t> scalesShape() const; ///< [B|P, H, T|16, W] or [1]
  bool isInt8() const { return scheme.starts_with("kv_int8"); }

  KvTestBuffer input(uint64_t seed) const; ///< f16 [B, H, N, D]
  KvTestBuffer positions() const;          ///< {0, 3}
  KvTestBuffer blockTable() const;         ///< [B, 1]
  KvTestBuffer emptyCodes() const;
  /// int8: zeros, written by the append; fp8: the static scale `fp8Scale`.
  KvTestBuffer emptyScales(float fp8Scale) const;
  KvTestBuffer seqLens() const; ///< [1, B]: positions + new tokens
  KvTestBuffer query(uint64_t seed) const;
  /// kv_attend's scales: the cache's as [rows, W], or the static [1, 1].
  KvTensor attendScales(KvTestBuffer &scales) const;
};

/// Points lowbit at the driver stub `stubPath` (LOWBIT_LIBCUDA) and away
/// from nvJitLink (PTX-only entries, which the stub reads); call before
/// anything loads either (each is loaded once per process). True.
bool useCudaDriverStub(const char *stubPath);

/// A Jit with the disk cache off, so that each test compiles what it
/// launches.
Expected<std::unique_ptr<Jit>> uncachedJit();

/// One made-up device buffer per parameter of `kernel`, at `base` + 1 MiB
/// x its index, every call-fixed size from `sizes` (by kvDimName).
std::vector<KvTensor>
fakeKvTensors(const KvKernel &kernel,
              const std::map<std::string_view, int64_t> &sizes, uintptr_t base);

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_JIT_JITKVSUPPORT_H
