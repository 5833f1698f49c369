//===- CpuJit.h - A minimal JIT for loops-level test functions -*- C++ -*-===//
//
// Private to the tests in tests/gpu: parses a module of func.func over
// memrefs (scf loops, lowbit.encode/decode), runs lowbit-expand-codecs and
// the upstream LLVM conversions, and JIT-compiles it with the product's
// host JIT (lowering/CpuTail.h). The product's CPU tail lives there too;
// this harness only exists so the codec expansion can be tested on its own.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_GPU_CPUJIT_H
#define LOWBIT_TESTS_GPU_CPUJIT_H

#include <cstdint>
#include <memory>
#include <string>

namespace lowbit::test {

/// The C interface of a rank-1 memref (llvm.emit_c_interface).
template <typename T> struct MemRef1D {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
};

template <typename T> MemRef1D<T> viewOf(T *data, int64_t size) {
  return {data, data, 0, size, 1};
}

class CpuJit {
public:
  /// Compiles `moduleText`; on failure returns nullptr and a message.
  static std::unique_ptr<CpuJit> compile(const std::string &moduleText,
                                         std::string &error);
  ~CpuJit();

  /// The address of `_mlir_ciface_<name>`, or nullptr.
  void *lookup(const std::string &name);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
  CpuJit();
};

/// The dialect spelling of a format, e.g. #lowbit.float<"e4m3">.
std::string formatAttrText(const std::string &formatName);

} // namespace lowbit::test

#endif // LOWBIT_TESTS_GPU_CPUJIT_H
