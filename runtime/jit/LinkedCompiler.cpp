//===- LinkedCompiler.cpp - The Jit's compiler, linked in -----------------===//
//
// compilerBackend() for binaries that link the compiler (LowbitJit): the
// GPU build (GpuBuild.cpp), the CPU tail's engines and LLVM's host CPU
// detection. liblowbit-compiler.so exports this same table to the
// MLIR-free LowbitJitLoader.
//
//===----------------------------------------------------------------------===//

#include "runtime/jit/CompilerBackend.h"
#include "runtime/jit/KvLinkedCompiler.h"

#include "runtime/cache/Hash.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/jit/LaunchPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/TargetParser/Host.h"

namespace lowbit::jit {
namespace {

Expected<GpuCompileResult> compileGpu(const KernelSpec &spec,
                                      const Target &target, bool startLinker) {
  Expected<GpuBuild> build = buildGpuKernel(spec, target, startLinker);
  if (!build)
    return std::move(build).takeError();
  return backendResult(std::move(*build));
}

class LinkedCpuKernel final : public CpuKernelHandle {
public:
  explicit LinkedCpuKernel(std::unique_ptr<compiler::CpuKernel> kernel)
      : kernel(std::move(kernel)) {}
  Status run(std::span<const CpuBuffer> buffers) override {
    std::vector<compiler::HostBuffer> hostBuffers;
    hostBuffers.reserve(buffers.size());
    for (const CpuBuffer &buffer : buffers)
      hostBuffers.push_back({buffer.data, buffer.rows, buffer.cols});
    if (llvm::Error error = kernel->run(hostBuffers))
      return makeError(ErrorCode::InvalidArgument,
                       llvm::toString(std::move(error)));
    return Status::success();
  }

private:
  std::unique_ptr<compiler::CpuKernel> kernel;
};

Expected<std::unique_ptr<CpuKernelHandle>> compileCpu(const KernelSpec &spec) {
  auto compiled = compiler::compileForCpu(spec);
  if (!compiled)
    return makeError(ErrorCode::CompileFailed,
                     llvm::toString(compiled.takeError()));
  return std::unique_ptr<CpuKernelHandle>(
      std::make_unique<LinkedCpuKernel>(std::move(*compiled)));
}

std::string hostFeatures() {
  std::string features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    if (feature.getValue())
      features += "+" + feature.getKey().str() + ",";
  return llvm::sys::getHostCPUName().str() + " features#" +
         runtime::toHex64(runtime::xxh64(features.data(), features.size(), 0));
}

Status warmUp(const Target &target) {
  // The smallest named kernel: what a first compile pays once per process
  // (context and dialects in the pool, LLVM's target and pass setup, and
  // for a GPU the nvJitLink warm-up buildGpuKernel starts) does not depend
  // on the spec.
  std::string error;
  std::optional<KernelSpec> spec = parseKernelSpec("dequantize int8", &error);
  if (!spec)
    return makeError(ErrorCode::InvalidArgument, "warm-up spec: " + error);
  if (target.isNvidia()) {
    Expected<GpuBuild> build = buildGpuKernel(*spec, target);
    // Nothing links this build: the nvJitLink warm-up it started must not
    // outlive the warm-up (buildGpuKernel's failure path waits the same).
    (void)runtime::waitForNvJitLinkWarmup();
    if (!build)
      return std::move(build).takeError();
    return Status::success();
  }
  Expected<std::unique_ptr<CpuKernelHandle>> kernel = compileCpu(*spec);
  if (!kernel)
    return std::move(kernel).takeError();
  return Status::success();
}

} // namespace

const CompilerBackend &linkedCompilerBackend() {
  static const CompilerBackend backend{compileGpu,   compileCpu,   hostFeatures,
                                       compileKvGpu, compileKvCpu, warmUp};
  return backend;
}

Expected<const CompilerBackend *> compilerBackend() {
  return &linkedCompilerBackend();
}

} // namespace lowbit::jit
