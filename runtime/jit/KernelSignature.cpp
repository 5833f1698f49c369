//===- KernelSignature.cpp - A kernel's cache signature, without MLIR -----===//

#include "runtime/jit/KernelSignature.h"

#include "runtime/cache/Hash.h"
#include "runtime/spec/KernelAbi.h"

#include <array>

namespace lowbit::jit {

runtime::KernelSignature kernelSignature(const KernelSpec &spec,
                                         const Target &target,
                                         std::string_view hostFeatures) {
  runtime::KernelSignature signature = targetSignature(
      printKernelSpec(spec), target, hostFeatures, int(kernelAbi(spec).size()));
  signature.inputDtype = std::string(valueTypeName(spec.valueType));
  signature.rowsPolicy = spec.rows == kDynamic ? runtime::SizePolicy::Dynamic
                                               : runtime::SizePolicy::Static;
  signature.colsPolicy = spec.cols == kDynamic ? runtime::SizePolicy::Dynamic
                                               : runtime::SizePolicy::Static;
  return signature;
}

runtime::KernelSignature targetSignature(std::string canonicalSpec,
                                         const Target &target,
                                         std::string_view hostFeatures,
                                         int pointerCount) {
  runtime::KernelSignature signature;
  signature.spec = std::move(canonicalSpec);
  if (target.isCpu()) {
    signature.chip = "host";
    signature.features = std::string(hostFeatures);
  } else {
    signature.chip = target.chip;
    signature.features = "+ptx" + std::to_string(target.ptxVersion);
  }
  signature.pointerCount = pointerCount;
  signature.llvmVersion = std::string(compilerLlvmVersion());
  std::string_view pipeline = compilerPipelineDescription();
  signature.pipelineHash = runtime::xxh64(pipeline.data(), pipeline.size(), 0);
  return signature;
}

runtime::KernelKey
primaryKernelKey(const KernelSpec &spec,
                 std::shared_ptr<const runtime::PreparedSignature> signature) {
  // nullptr is 16-byte aligned: the key of aligned buffers.
  std::array<const void *, 32> aligned{};
  size_t count = size_t(signature->signature().pointerCount);
  return runtime::makeKernelKey(
      std::move(signature), spec.rows == kDynamic ? 0 : spec.rows,
      spec.cols == kDynamic ? 0 : spec.cols,
      std::span<const void *const>(aligned.data(), count));
}

} // namespace lowbit::jit
