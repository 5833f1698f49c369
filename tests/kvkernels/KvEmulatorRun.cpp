//===- KvEmulatorRun.cpp - KV kernels' GPU modules in the emulator --------===//

#include "KvEmulatorRun.h"

#include "lowering/GpuEmulator.h"
#include "lowering/GpuTail.h"
#include "runtime/aot/Bundle.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/emulator/EmulatedProgram.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>

namespace lowbit::kvtest {

namespace {

/// The bytes of one element of each ABI parameter, and whether the op
/// writes it (docs/kv-kernels.md).
struct ParamInfo {
  size_t elementBytes;
  bool writable;
};

size_t valueBytes(kv::KvValueType type) {
  return type == kv::KvValueType::F32 ? 4 : 2;
}

std::vector<ParamInfo> paramInfo(const kv::KvKernelSpec &spec) {
  bool int8 = spec.scheme.isInt8();
  std::vector<ParamInfo> params;
  if (spec.op == kv::KvKernelOp::Append)
    params = {
        {valueBytes(spec.valueType), false}, {1, true}, {4, int8}, {4, false}};
  else
    params = {
        {1, false}, {4, false}, {4, false}, {valueBytes(spec.valueType), true}};
  if (spec.layout == kv::KvLayout::Paged)
    params.push_back({4, false});
  return params;
}

} // namespace

KvEmulatedKernel::KvEmulatedKernel() = default;
KvEmulatedKernel::~KvEmulatedKernel() {
  // The JIT'd module before the context its types came from.
  module.reset();
}

std::unique_ptr<KvEmulatedKernel>
KvEmulatedKernel::compile(const kv::KvKernelSpec &spec, const Target &target,
                          std::string &error) {
  std::unique_ptr<KvEmulatedKernel> kernel(new KvEmulatedKernel());
  kernel->spec = spec;
  kernel->context = compiler::makeContext();
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(
      kernel->context.get(), [&diagnostics](mlir::Diagnostic &diagnostic) {
        diagnostics += diagnostic.str() + "\n";
        return mlir::success();
      });
  auto built = compiler::buildKvModule(*kernel->context, spec);
  if (!built) {
    error = llvm::toString(built.takeError());
    return nullptr;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*built);
  if (llvm::Error lowered = compiler::lowerKvForGpu(*module)) {
    error = llvm::toString(std::move(lowered));
    return nullptr;
  }
  return finish(std::move(kernel), *module, target, error);
}

std::unique_ptr<KvEmulatedKernel>
KvEmulatedKernel::finish(std::unique_ptr<KvEmulatedKernel> kernel,
                         mlir::ModuleOp module, const Target &target,
                         std::string &error) {
  llvm::Expected<compiler::GpuCompilation> compiled =
      emulator::compileForEmulation(module, /*lowerToLoops=*/nullptr, target,
                                    kernel->module);
  if (!compiled) {
    error = llvm::toString(compiled.takeError());
    return nullptr;
  }
  kernel->launchPlan = std::move(compiled->plan);
  if (!kernel->launchPlan.unsupported.empty()) {
    error = "launch plan: " + kernel->launchPlan.unsupported;
    return nullptr;
  }
  return kernel;
}

std::unique_ptr<KvEmulatedKernel> KvEmulatedKernel::compileLoops(
    const std::function<llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>(
        mlir::MLIRContext &)> &build,
    std::vector<std::pair<size_t, bool>> params, const Target &target,
    std::string &error) {
  std::unique_ptr<KvEmulatedKernel> kernel(new KvEmulatedKernel());
  kernel->context = compiler::makeContext();
  kernel->kiviParams = std::move(params);
  auto built = build(*kernel->context);
  if (!built) {
    error = llvm::toString(built.takeError());
    return nullptr;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*built);
  return finish(std::move(kernel), *module, target, error);
}

std::unique_ptr<KvEmulatedKernel>
KvEmulatedKernel::compileKivi(const kv::KiviKernelSpec &spec,
                              const Target &target, std::string &error) {
  size_t residual = valueBytes(spec.residualType);
  std::vector<std::pair<size_t, bool>> params;
  if (spec.op == kv::KvKernelOp::Append)
    params = {{residual, false}, {1, true},        {4, true},
              {4, true},         {residual, true}, {4, false}};
  else
    params = {{1, false},
              {4, false},
              {4, false},
              {residual, false},
              {4, false},
              {4, false},
              {valueBytes(spec.outputType), true}};
  if (spec.layout == kv::KvLayout::Paged)
    params.push_back({4, false});
  auto build = [&](mlir::MLIRContext &context) {
    return compiler::buildKiviLoops(context, spec);
  };
  return compileLoops(build, std::move(params), target, error);
}

std::string
KvEmulatedKernel::run(emulator::Device &device,
                      const std::vector<compiler::KvBuffer> &buffers) const {
  std::vector<ParamInfo> params = paramInfo(spec);
  if (!kiviParams.empty()) {
    params.clear();
    for (auto [bytes, writable] : kiviParams)
      params.push_back({bytes, writable});
  }
  if (buffers.size() != params.size())
    return "the kernel takes " + std::to_string(params.size()) +
           " buffers, got " + std::to_string(buffers.size());
  std::vector<emulator::MemoryRange> ranges;
  for (size_t index = 0; index < buffers.size(); ++index) {
    int64_t elements = 1;
    for (int64_t size : buffers[index].shape)
      elements *= size;
    ranges.push_back(
        {buffers[index].data, size_t(elements) * params[index].elementBytes,
         params[index].writable, "buffer " + std::to_string(index)});
  }
  device.setModuleMemory(module->moduleMemory());
  auto resolved = std::make_unique<launch::ResolvedStep>();
  for (size_t step = 0; step < launchPlan.steps.size(); ++step) {
    if (std::string error = resolve(step, buffers, *resolved); !error.empty())
      return error;
    if (resolved->empty())
      continue; // An empty grid: nothing to launch.
    std::vector<uint64_t> values(resolved->slots.begin(),
                                 resolved->slots.begin() + resolved->slotCount);
    if (Status status = emulator::launchKernel(
            device, *module, launchPlan.steps[step].kernelName, resolved->sizes,
            values, ranges);
        !status)
      return status.error().message;
  }
  return "";
}

std::string
KvEmulatedKernel::resolve(size_t step,
                          const std::vector<compiler::KvBuffer> &buffers,
                          launch::ResolvedStep &out) const {
  std::string error;
  std::optional<aot::Launch> launch =
      aot::fromLaunchStep(launchPlan.steps.at(step), &error);
  if (!launch)
    return error;
  aot::SizeInstance size;
  std::vector<uint64_t> addresses;
  for (const compiler::KvBuffer &buffer : buffers) {
    size.dims.push_back(buffer.shape);
    addresses.push_back(uint64_t(reinterpret_cast<uintptr_t>(buffer.data)));
  }
  Status status = aot::resolveLaunchFor(*launch, size, addresses,
                                        /*workspace=*/0,
                                        /*workspaceWords=*/0, out);
  return status ? std::string() : status.error().message;
}

const KvEmulatedKernel &emulatedKernelFor(const kv::KvKernelSpec &spec,
                                          const std::string &targetName) {
  static std::map<std::string, std::unique_ptr<KvEmulatedKernel>> cache;
  std::unique_ptr<KvEmulatedKernel> &entry =
      cache[targetName + " " + formatKvKernelSpec(spec)];
  if (!entry) {
    std::string error;
    std::optional<Target> target = parseTarget(targetName, &error);
    if (target)
      entry = KvEmulatedKernel::compile(spec, *target, error);
    if (!entry)
      throw std::runtime_error(error);
  }
  return *entry;
}

KvRunner emulatorOn(const std::string &targetName) {
  return [targetName](const kv::KvKernelSpec &spec,
                      const std::vector<compiler::KvBuffer> &buffers) {
    emulator::Device device;
    return emulatedKernelFor(spec, targetName).run(device, buffers);
  };
}

} // namespace lowbit::kvtest
