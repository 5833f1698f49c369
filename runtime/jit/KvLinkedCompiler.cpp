//===- KvLinkedCompiler.cpp - The KV kernels' compiler entries ------------===//
//
// A KV spec's text -> the KV compilers (runtime/compiler/Kv*Compiler.h):
// PTX with the launch plan read off the lowered module (as `lowbit aot`
// reads it, describeGpuLaunches) and its workspace size, or a host engine.
//
//===----------------------------------------------------------------------===//

#include "runtime/jit/KvLinkedCompiler.h"

#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/KiviAttentionCompiler.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvCompiler.h"
#include "runtime/compiler/KvFamilyCompile.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/jit/KvJitSpec.h"
#include "runtime/jit/LaunchPlan.h"
#include "runtime/jit/WorkspaceWords.h"

namespace lowbit::jit {

namespace {

Error compileFailed(llvm::Error error) {
  return Error{ErrorCode::CompileFailed, llvm::toString(std::move(error))};
}

/// A host engine of any KV kind: its buffers as the compiler takes them
/// (KvBuffer of rank N, or kv_attend's [rows, cols] HostBuffer).
template <typename CpuKernel, typename Buffer>
class LinkedKvCpuKernel final : public KvCpuKernelHandle {
public:
  explicit LinkedKvCpuKernel(std::unique_ptr<CpuKernel> kernel)
      : kernel(std::move(kernel)) {}
  Status run(std::span<const KvCpuBuffer> buffers) override {
    std::vector<Buffer> converted;
    converted.reserve(buffers.size());
    for (const KvCpuBuffer &buffer : buffers) {
      if constexpr (std::is_same_v<Buffer, compiler::HostBuffer>) {
        if (buffer.shape.size() != 2)
          return makeError(ErrorCode::InvalidArgument,
                           "the kernel takes 2-D buffers");
        converted.push_back({buffer.data, buffer.shape[0], buffer.shape[1]});
      } else {
        converted.push_back(
            {buffer.data, {buffer.shape.begin(), buffer.shape.end()}});
      }
    }
    if (llvm::Error error = kernel->run(converted))
      return makeError(ErrorCode::InvalidArgument,
                       llvm::toString(std::move(error)));
    return Status::success();
  }

private:
  std::unique_ptr<CpuKernel> kernel;
};

template <typename Buffer, typename CpuKernel>
Expected<std::unique_ptr<KvCpuKernelHandle>>
wrap(llvm::Expected<std::unique_ptr<CpuKernel>> compiled) {
  if (!compiled)
    return compileFailed(compiled.takeError());
  return std::unique_ptr<KvCpuKernelHandle>(
      std::make_unique<LinkedKvCpuKernel<CpuKernel, Buffer>>(
          std::move(*compiled)));
}

/// The spec as the compiler's one KV entry takes it.
compiler::KvFamilySpec familySpec(const KvJitSpec &spec) {
  switch (spec.kind) {
  case KvJitSpec::Kind::Attention:
    return spec.decode;
  case KvJitSpec::Kind::Kivi:
    return spec.kivi;
  case KvJitSpec::Kind::KiviAttention:
    return spec.kiviDecode;
  case KvJitSpec::Kind::Matmul: // compileKvSpecForGpu takes it first.
  case KvJitSpec::Kind::Cache:
    break;
  }
  return spec.cache;
}

} // namespace

llvm::Expected<compiler::GpuCompilation>
compileKvSpecForGpu(const KvJitSpec &spec, const Target &target) {
  if (spec.kind == KvJitSpec::Kind::Matmul)
    return compiler::compileMatmulToPtx(spec.matmul, target);
  return compiler::compileKvFamilyToPtx(familySpec(spec), target);
}

Expected<GpuCompileResult> compileKvGpu(std::string_view specText,
                                        const Target &target,
                                        bool startLinker) {
  Expected<KvJitSpec> spec = parseKvJitSpec(specText);
  if (!spec)
    return std::move(spec).takeError();
  if (Expected<runtime::CubinMaker> maker =
          runtime::cubinMakerFromEnvironment();
      startLinker && maker && *maker == runtime::CubinMaker::NvJitLink)
    runtime::startNvJitLinkWarmup(target.chip);
  llvm::Expected<compiler::GpuCompilation> build =
      compileKvSpecForGpu(*spec, target);
  if (!build) {
    // Nothing links this build: the warm-up must not outlive it
    // (buildGpuKernel's failure path waits the same way).
    if (startLinker)
      (void)runtime::waitForNvJitLinkWarmup();
    return compileFailed(build.takeError());
  }
  return backendResult(std::move(*build));
}

GpuCompileResult backendResult(compiler::GpuCompilation build) {
  GpuCompileResult result;
  result.ptx = std::move(build.ptx);
  result.kernelNames = std::move(build.kernelNames);
  result.plan = build.plan.serialize();
  result.workspaceWords = overriddenWorkspaceWords(build.workspaceWords);
  result.workspaceRows = build.workspaceRows;
  return result;
}

Expected<std::unique_ptr<KvCpuKernelHandle>>
compileKvCpu(std::string_view specText) {
  Expected<KvJitSpec> spec = parseKvJitSpec(specText);
  if (!spec)
    return std::move(spec).takeError();
  switch (spec->kind) {
  case KvJitSpec::Kind::Cache:
    return wrap<compiler::KvBuffer>(compiler::compileKvForCpu(spec->cache));
  case KvJitSpec::Kind::Kivi:
    return wrap<compiler::KvBuffer>(compiler::compileKiviForCpu(spec->kivi));
  case KvJitSpec::Kind::Attention:
    return wrap<compiler::HostBuffer>(
        compiler::compileKvAttentionForCpu(spec->decode));
  case KvJitSpec::Kind::KiviAttention:
    return wrap<compiler::KvBuffer>(
        compiler::compileKiviAttentionForCpu(spec->kiviDecode));
  case KvJitSpec::Kind::Matmul:
    return wrap<compiler::HostBuffer>(
        compiler::compileMatmulForCpu(spec->matmul));
  }
  return makeError(ErrorCode::Unsupported, "unknown KV kernel kind");
}

} // namespace lowbit::jit
