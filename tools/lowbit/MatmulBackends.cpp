//===- MatmulBackends.cpp - Where `lowbit matmul` runs its kernel ---------===//

#include "tools/lowbit/MatmulBackends.h"

#include "lowbit/Jit.h"
#include "matmul/MatmulWeights.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "runtime/emulator/EmulatedProgram.h"
#include "target/Target.h"
#include "tools/lowbit/JitBackend.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"

namespace lowbit::cli {

namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

/// The kernel's buffers in ABI order, with their shapes and element sizes;
/// y last, written.
struct AbiBuffers {
  matmul::WeightBuffers weights;
  std::vector<float> bias;
  std::vector<uint8_t> x, y;
  std::vector<std::vector<uint8_t>> sides;
  std::vector<void *> data;
  std::vector<std::array<int64_t, 2>> shapes;
  std::vector<compiler::KvKernelParam> params;
};

void assemble(const MatmulProblem &problem, AbiBuffers &buffers) {
  const matmul::MatmulSpec &spec = problem.spec;
  int64_t n = problem.weights->rows, k = problem.weights->cols;
  buffers.weights = matmul::weightBuffers(*problem.weights);
  buffers.x = problem.x;
  buffers.bias = problem.bias;
  buffers.y.assign(size_t(problem.m * n * valueTypeBytes(spec.output)), 0);
  buffers.params = compiler::matmulParams(spec);
  buffers.shapes = compiler::matmulShapes(spec, {problem.m, n, k});
  buffers.sides = problem.sides;
  for (auto [index, param] : llvm::enumerate(buffers.params)) {
    const std::string &name = param.name;
    // The prologues' side tensors follow x, in order.
    if (index >= 1 && index <= buffers.sides.size()) {
      buffers.data.push_back(buffers.sides[index - 1].data());
      continue;
    }
    buffers.data.push_back(name == "x" ? static_cast<void *>(buffers.x.data())
                           : name == "codes"  ? buffers.weights.codes.data()
                           : name == "scales" ? buffers.weights.scales.data()
                           : name == "zeros"  ? buffers.weights.zeros.data()
                           : name == "global" ? buffers.weights.global.data()
                           : name == "bias"
                               ? static_cast<void *>(buffers.bias.data())
                               : buffers.y.data());
  }
}

size_t elementBytes(std::string_view name) {
  return name == "f32" ? 4 : name == "f16" || name == "bf16" ? 2 : 1;
}

} // namespace

std::optional<std::vector<uint8_t>> runMatmulOnCpu(const MatmulProblem &problem,
                                                   std::string *error,
                                                   double *compileMillis) {
  Jit *jit = sharedJit(error);
  if (!jit)
    return std::nullopt;
  Expected<KvKernel> kernel =
      jit->getKv(matmul::printMatmulSpec(problem.spec), Target{});
  if (!kernel) {
    fail(error, kernel.error().message);
    return std::nullopt;
  }
  if (compileMillis)
    *compileMillis = kernel->compileMillis();
  AbiBuffers buffers;
  assemble(problem, buffers);
  std::vector<KvTensor> tensors;
  for (size_t index = 0; index < buffers.data.size(); ++index) {
    KvTensor tensor;
    tensor.data = buffers.data[index];
    tensor.element = kernel->params()[index].element;
    tensor.rank = 2;
    tensor.shape[0] = buffers.shapes[index][0];
    tensor.shape[1] = buffers.shapes[index][1];
    tensors.push_back(tensor);
  }
  if (Status ran = kernel->run(tensors); !ran) {
    fail(error, ran.error().message);
    return std::nullopt;
  }
  return std::move(buffers.y);
}

std::optional<std::vector<uint8_t>>
runMatmulInEmulator(const MatmulProblem &problem, std::string_view targetText,
                    std::string *error) {
  std::string reason;
  std::optional<Target> target = parseTarget(targetText, &reason);
  if (!target || !target->isNvidia() || !validateTarget(*target, &reason)) {
    fail(error, target && reason.empty()
                    ? "the GPU emulator runs NVIDIA targets, got '" +
                          target->str() + "'"
                    : reason);
    return std::nullopt;
  }
  auto prefix = [&] { return "gpu-emulator (" + target->str() + "): "; };
  if (std::string why = compiler::matmulTargetRefusal(problem.spec, *target);
      !why.empty()) {
    fail(error, prefix() + why);
    return std::nullopt;
  }
  llvm::Expected<std::string> gpuText =
      compiler::matmulGpuText(problem.spec, &*target);
  if (!gpuText) {
    fail(error, prefix() + llvm::toString(gpuText.takeError()));
    return std::nullopt;
  }
  auto program = emulator::EmulatedProgram::compileText(*gpuText, *target);
  if (!program) {
    fail(error, prefix() + program.error().message);
    return std::nullopt;
  }
  AbiBuffers buffers;
  assemble(problem, buffers);
  std::vector<emulator::EmulatorBuffer> emulated;
  for (size_t index = 0; index < buffers.data.size(); ++index) {
    const compiler::KvKernelParam &param = buffers.params[index];
    emulated.push_back({buffers.data[index], buffers.shapes[index][0],
                        buffers.shapes[index][1],
                        elementBytes(param.elementType), param.isResult,
                        param.name});
  }
  // The runtime's workspace (docs/kernel-abi.md): all zero before the
  // first launch (W4A4's nvfp4 X carries its global scale through it;
  // X behind prologues its codes, so its size grows with X's rows).
  int64_t words =
      (*program)->workspaceWordsFor(buffers.shapes[0][0], buffers.shapes[0][1]);
  if (words < 0) {
    fail(error, prefix() + "X's workspace exceeds the ABI's limit");
    return std::nullopt;
  }
  std::vector<int32_t> workspace(size_t(words), 0);
  if (!workspace.empty())
    emulated.push_back({workspace.data(), 1, int64_t(workspace.size()),
                        sizeof(int32_t), true, "the workspace"});
  emulator::Device device;
  if (Status ran = (*program)->run(device, emulated); !ran) {
    fail(error, prefix() + ran.error().message);
    return std::nullopt;
  }
  return std::move(buffers.y);
}

} // namespace lowbit::cli
