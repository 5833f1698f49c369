//===- EmulatedProgram.cpp - Compile a spec for the emulator, run its plan ===//

#include "runtime/emulator/EmulatedProgram.h"

#include "lowering/GpuEmulator.h"
#include "lowering/GpuTail.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/compiler/WorkspaceRowsOf.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

namespace lowbit::emulator {

struct EmulatedProgram::State {
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<EmulatedModule> module;
  std::optional<KernelSpec> spec;
  /// The workspace the spec's kernels take (docs/kernel-abi.md), in words:
  /// fixed, plus what grows with X's rows.
  int64_t workspaceWords = 0;
  workspace_abi::RowWords workspaceRows;
};

EmulatedProgram::EmulatedProgram() : state(std::make_unique<State>()) {}
EmulatedProgram::~EmulatedProgram() = default;

namespace {

Error compileError(std::string message) {
  return makeError(ErrorCode::CompileFailed, std::move(message));
}

/// compileForEmulation, then the plan checked: shared by both entries.
/// The module must die before the program that owns its context.
Status lowerAndLoad(EmulatedProgram::State &state, jit::LaunchPlan &plan,
                    mlir::ModuleOp module,
                    compiler::GpuLoopsLowering lowerToLoops,
                    const Target &target, const ModuleMutation &mutate) {
  llvm::Expected<compiler::GpuCompilation> compiled =
      compileForEmulation(module, lowerToLoops, target, state.module, mutate);
  if (!compiled)
    return compileError(llvm::toString(compiled.takeError()));
  state.workspaceWords = compiled->workspaceWords;
  state.workspaceRows = compiler::workspaceRowsOf(module);
  plan = std::move(compiled->plan);
  if (!plan.unsupported.empty())
    return makeError(ErrorCode::Unsupported,
                     "launch plan: " + plan.unsupported);
  return Status::success();
}

/// Makes the program's context and collects its diagnostics in `text`.
struct DiagnosticsCollector {
  DiagnosticsCollector(EmulatedProgram::State &state, std::string &text)
      : context((state.context = compiler::makeContext()).get()),
        handler(context, [&text](mlir::Diagnostic &diagnostic) {
          text += diagnostic.str() + "\n";
          return mlir::success();
        }) {}
  mlir::MLIRContext *context;
  mlir::ScopedDiagnosticHandler handler;
};

size_t elementBytesOf(const std::string &type) {
  return type == "f32" ? 4 : (type == "f16" || type == "bf16") ? 2 : 1;
}

} // namespace

llvm::Expected<compiler::GpuCompilation> compileForEmulation(
    mlir::ModuleOp module, llvm::Error (*lowerToLoops)(mlir::ModuleOp),
    const Target &target, std::unique_ptr<EmulatedModule> &loaded,
    const ModuleMutation &mutate) {
  compiler::GpuCompileOptions options;
  options.last = compiler::GpuStage::Nvvm;
  options.observe = [&](compiler::GpuStage stage,
                        mlir::ModuleOp lowered) -> llvm::Error {
    if (stage != compiler::GpuStage::Nvvm)
      return llvm::Error::success();
    if (mutate)
      mutate(lowered);
    auto emulated = compileForEmulator(lowered, emulator::runtimeSymbols());
    if (!emulated)
      return emulated.takeError();
    loaded = std::move(*emulated);
    return llvm::Error::success();
  };
  return compiler::compileModuleForGpu(module, lowerToLoops, target, options);
}

Expected<std::unique_ptr<EmulatedProgram>>
EmulatedProgram::compile(const KernelSpec &spec, const Target &target,
                         const ModuleMutation &mutate) {
  if (!target.isNvidia())
    return makeError(ErrorCode::InvalidArgument,
                     "the GPU emulator runs NVIDIA targets, got '" +
                         target.str() + "'");
  std::unique_ptr<EmulatedProgram> program(new EmulatedProgram());
  State &state = *program->state;
  state.spec = spec;
  std::string diagnostics;
  DiagnosticsCollector collector(state, diagnostics);
  auto module = compiler::buildKernelModule(*state.context, spec);
  if (!module)
    return compileError(llvm::toString(module.takeError()));
  Status status = lowerAndLoad(state, program->launchPlan, **module,
                               compiler::lowerForGpu, target, mutate);
  *module = nullptr;
  if (!status)
    return std::move(status).takeError();
  return program;
}

Expected<std::unique_ptr<EmulatedProgram>>
EmulatedProgram::compileText(std::string_view text, const Target &target,
                             const ModuleMutation &mutate) {
  std::unique_ptr<EmulatedProgram> program(new EmulatedProgram());
  State &state = *program->state;
  std::string diagnostics;
  DiagnosticsCollector collector(state, diagnostics);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(
          llvm::StringRef(text.data(), text.size()), state.context.get());
  if (!module)
    return compileError("parsing the module: " + diagnostics);
  Status status = lowerAndLoad(state, program->launchPlan, *module,
                               /*lowerToLoops=*/nullptr, target, mutate);
  module = nullptr;
  if (!status)
    return std::move(status).takeError();
  return program;
}

int64_t EmulatedProgram::workspaceWords() const {
  return state->workspaceWords;
}

int64_t EmulatedProgram::workspaceWordsFor(int64_t rows, int64_t cols) const {
  return workspace_abi::wordsFor(state->workspaceWords, state->workspaceRows,
                                 rows, cols);
}

int64_t EmulatedProgram::workspaceZeroedWords() const {
  return workspace_abi::zeroedWords(state->workspaceWords,
                                    state->workspaceRows);
}

Status EmulatedProgram::runSpec(Device &device,
                                std::span<const ShapedBuffer> buffers) const {
  if (!state->spec)
    return makeError(ErrorCode::InvalidArgument,
                     "runSpec needs a program compiled from a spec");
  std::vector<compiler::KernelParam> params =
      compiler::kernelParams(*state->spec);
  if (params.size() != buffers.size())
    return makeError(ErrorCode::InvalidArgument,
                     "the kernel takes " + std::to_string(params.size()) +
                         " buffers, got " + std::to_string(buffers.size()));
  std::vector<EmulatorBuffer> described;
  for (size_t i = 0; i < params.size(); ++i)
    described.push_back({buffers[i].data, buffers[i].rows, buffers[i].cols,
                         elementBytesOf(params[i].elementType),
                         params[i].isResult,
                         "kernel parameter " + std::to_string(i)});
  // The runtime's workspace, sized for this call: zero before the first
  // launch, and the kernels must leave its fixed words zero after the last
  // (docs/kernel-abi.md).
  int64_t words = buffers.empty()
                      ? state->workspaceWords
                      : workspaceWordsFor(buffers[0].rows, buffers[0].cols);
  if (words < 0)
    return makeError(ErrorCode::InvalidArgument,
                     "the workspace for parameter 0 of [" +
                         std::to_string(buffers[0].rows) + ", " +
                         std::to_string(buffers[0].cols) +
                         "] exceeds the ABI's limit of " +
                         std::to_string(workspace_abi::kMaxWords) + " words");
  std::vector<int32_t> workspace(size_t(words), 0);
  if (!workspace.empty())
    described.push_back({workspace.data(), 1, int64_t(workspace.size()),
                         sizeof(int32_t), true, "the workspace"});
  if (Status status = run(device, described); !status)
    return status;
  for (size_t word = 0; word < size_t(workspaceZeroedWords()); ++word)
    if (workspace[word] != 0)
      return makeError(ErrorCode::Unsupported,
                       "the kernels left word " + std::to_string(word) +
                           " of the workspace at " +
                           std::to_string(workspace[word]) +
                           " after the last launch; it must be zero again");
  return Status::success();
}

Status launchKernel(Device &device, const EmulatedModule &module,
                    const std::string &kernelName,
                    const std::array<int64_t, 7> &sizes,
                    std::vector<uint64_t> &values,
                    std::span<const MemoryRange> buffers) {
  const EmulatedKernel *kernel = module.kernel(kernelName);
  if (!kernel)
    return makeError(ErrorCode::InvalidArgument,
                     "launch plan names kernel " + kernelName +
                         ", which the module does not define");
  for (int i = 0; i < 7; ++i)
    if (sizes[i] < 0 || sizes[i] > int64_t(UINT32_MAX))
      return makeError(ErrorCode::InvalidArgument,
                       "launch of " + kernelName + ": size " +
                           std::to_string(sizes[i]) +
                           " does not fit cuLaunchKernel's unsigned int");
  std::vector<void *> parameters;
  for (uint64_t &value : values)
    parameters.push_back(&value);
  KernelLaunch launch;
  launch.name = kernelName;
  launch.entry = kernel->entry;
  launch.grid = {uint32_t(sizes[0]), uint32_t(sizes[1]), uint32_t(sizes[2])};
  launch.block = {uint32_t(sizes[3]), uint32_t(sizes[4]), uint32_t(sizes[5])};
  launch.staticSharedBytes = kernel->staticSharedBytes;
  launch.dynamicSharedOffset = kernel->dynamicSharedOffset;
  launch.dynamicSharedBytes = size_t(sizes[6]);
  launch.parameters = parameters.data();
  return device.launch(launch, buffers);
}

Status EmulatedProgram::run(Device &device,
                            std::span<const EmulatorBuffer> buffers) const {
  jit::ParamShapes shapes;
  std::vector<uint64_t> pointers;
  std::vector<MemoryRange> ranges;
  for (const EmulatorBuffer &buffer : buffers) {
    shapes.push_back({buffer.rows, buffer.cols});
    pointers.push_back(reinterpret_cast<uintptr_t>(buffer.data));
    ranges.push_back({buffer.data,
                      size_t(buffer.rows * buffer.cols) * buffer.elementBytes,
                      buffer.writable, buffer.name});
  }
  device.setModuleMemory(state->module->moduleMemory());
  for (const jit::LaunchStep &step : launchPlan.steps) {
    Expected<jit::ResolvedLaunch> resolved =
        jit::resolveLaunch(step, shapes, pointers);
    if (!resolved)
      return std::move(resolved).takeError();
    if (resolved->empty())
      continue; // An empty tensor: nothing to launch (as Kernel::launch).
    if (Status status = launchKernel(device, *state->module, step.kernelName,
                                     resolved->sizes, resolved->values, ranges);
        !status)
      return status;
  }
  return Status::success();
}

} // namespace lowbit::emulator
