//===- MatmulCompiler.cpp - Quantized-weight matmul: spec -> kernels ------===//

#include "runtime/compiler/MatmulCompiler.h"

#include "dialect/LowbitMatmulOps.h"
#include "format/SchemeText.h"
#include "lowering/GpuMatmul.h"
#include "lowering/GpuMatmulFp4.h"
#include "lowering/GpuMatmulFrontQuantize.h"
#include "lowering/GpuMatmulQuantized.h"
#include "lowering/Passes.h"
#include "matmul/MatmulPrologues.h"
#include "runtime/compiler/KernelCompileSupport.h"
#include "target/ChipCapabilities.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::compiler {

llvm::Expected<OwningOpRef<ModuleOp>>
buildMatmulModule(MLIRContext &context, const matmul::MatmulSpec &spec) {
  // The model's refusals first, in its words (the verifier would say the
  // same about the op, less directly).
  std::string error;
  if (std::string refusal = matmul::weightSchemeRefusal(spec.scheme);
      !refusal.empty())
    return compileError("the matmul's scheme is not a weight scheme: " +
                        refusal);
  if (spec.activation) {
    if (std::string refusal =
            matmul::activationPairRefusal(spec.scheme, *spec.activation);
        !refusal.empty())
      return compileError("the matmul's activations: " + refusal);
    if (std::string refusal = matmul::matmulPrologueRefusal(spec.prologues);
        !refusal.empty())
      return compileError("the matmul's prologues: " + refusal +
                          " (docs/matmul.md, \"Quantized activations\")");
  }
  if (!matmul::validateMatmulShape(spec, spec.n, spec.k, &error))
    return compileError(error);
  // linalg and tensor: the fused prologue kernel lowbit-matmul-to-loops
  // builds for X behind prologues (LowbitFusionBody.h).
  context.loadDialect<ld::LowbitDialect, bufferization::BufferizationDialect,
                      memref::MemRefDialect, linalg::LinalgDialect,
                      tensor::TensorDialect>();
  FailureOr<ld::SchemeAttr> scheme =
      ld::toSchemeAttr(&context, spec.scheme, &error);
  if (failed(scheme))
    return compileError("the matmul's scheme is invalid: " + error);
  ld::SchemeAttr activationScheme;
  if (spec.activation) {
    FailureOr<ld::SchemeAttr> attr =
        ld::toSchemeAttr(&context, *spec.activation, &error);
    if (failed(attr))
      return compileError("the matmul's activation scheme is invalid: " +
                          error);
    activationScheme = *attr;
  }
  std::vector<KvKernelParam> params = matmulParams(spec);
  return buildSignatureModule(
      context, params,
      [&](OpBuilder &builder, Location loc, ValueRange args) {
        ImplicitLocOpBuilder b(loc, builder);
        auto arg = [&](StringRef name) -> Value {
          for (auto [index, param] : llvm::enumerate(params))
            if (param.name == name)
              return args[index];
          return {};
        };
        auto tensorOf = [&](Value buffer) -> Value {
          if (!buffer)
            return {};
          auto type = cast<MemRefType>(buffer.getType());
          return bufferization::ToTensorOp::create(
              b, RankedTensorType::get(type.getShape(), type.getElementType()),
              buffer, /*restrict=*/true, /*writable=*/false);
        };
        // The bias is the ABI's [1, N] row; the op takes [N].
        Value bias = arg("bias");
        if (bias)
          bias = memref::CollapseShapeOp::create(
              b, bias, ArrayRef<ReassociationIndices>{{0, 1}});
        SmallVector<Value> sides;
        for (const std::string &name :
             matmul::matmulSideInputNames(spec.prologues))
          sides.push_back(tensorOf(arg(name)));
        ArrayAttr prologues;
        if (!spec.prologues.empty()) {
          SmallVector<StringRef> texts;
          std::vector<std::string> printed;
          for (const Prologue &prologue : spec.prologues)
            printed.push_back(printPrologue(prologue));
          for (const std::string &text : printed)
            texts.push_back(text);
          prologues = b.getStrArrayAttr(texts);
        }
        Value output = arg("y");
        auto outputType = cast<MemRefType>(output.getType());
        auto matmulOp = ld::MatmulOp::create(
            b,
            RankedTensorType::get(outputType.getShape(),
                                  outputType.getElementType()),
            tensorOf(arg("x")), tensorOf(arg("codes")), tensorOf(arg("scales")),
            tensorOf(arg("zeros")), tensorOf(arg("global")), tensorOf(bias),
            sides, *scheme, activationScheme, prologues);
        bufferization::MaterializeInDestinationOp::create(
            b, /*result=*/Type(), matmulOp.getResult(), output,
            /*restrict=*/true, /*writable=*/true);
      },
      "matmul");
}

llvm::Error lowerMatmulToLoops(ModuleOp module) {
  return runLoweringPasses(module,
                           {createLowbitMatmulToLoops,
                            createLowbitFusionToLoops, createLowbitToLoops},
                           "lowbit-matmul-to-loops");
}

llvm::Error lowerMatmulForGpu(ModuleOp module) {
  // Twice: lowbit-to-gpu rewrites the ops that exist when it starts, and
  // the matmul's rewrite builds the fused prologue | quantize kernel in
  // front of X's GEMM (GpuMatmulFrontQuantize.h), which the second run
  // lowers. Without prologues the second run finds nothing.
  if (llvm::Error error =
          runLoweringPasses(module, {createLowbitToGpu, createLowbitToGpu},
                            "the matmul GPU lowering"))
    return error;
  // Loops over the op on the host would run it on the CPU: a matmul the
  // GPU lowering left is one it has no kernel for.
  std::string left, why;
  module.walk([&](ld::MatmulOp op) {
    if (!left.empty())
      return;
    left = "matmul " + printSchemeText(op.getWeightScheme()) +
           " from=" + std::string(valueTypeName(op.getInputDtype())) +
           " to=" + std::string(valueTypeName(op.getOutputDtype()));
    why = gpuMatmulRefusal(op);
  });
  if (!left.empty())
    return compileError("lowbit.matmul has no GPU kernel here: the GPU "
                        "lowering (lowbit-to-gpu) left '" +
                        left + "' unmapped" + (why.empty() ? "" : ": " + why) +
                        " (docs/matmul-gpu.md)");
  // The front quantize kernel of X behind prologues (a fused op the
  // matmul's rewrite built) says why it has no GPU form (a diagnostic).
  if (module.walk([](ld::FusedOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    return compileError("the fused prologue | quantize kernel in front of "
                        "the matmul has no GPU lowering here "
                        "(docs/fusion.md)");
  return llvm::Error::success();
}

namespace {

/// Marks `module` with what `target` offers the lowering, which is
/// target independent: kBlockScaledMmaAttr when it has the block-scaled
/// mma.sync (the FP4 GEMM's native path).
void markTargetFeatures(ModuleOp module, const Target &target) {
  if (targetHas(target, TensorInstruction::MmaSyncBlockScale))
    module->setAttr(kBlockScaledMmaAttr, UnitAttr::get(module.getContext()));
}

/// buildMatmulModule (marked for `target` when given) then `lower`,
/// printed.
llvm::Expected<std::string> loweredText(const matmul::MatmulSpec &spec,
                                        llvm::Error (*lower)(ModuleOp),
                                        const Target *target = nullptr) {
  ContextLease context = borrowContext();
  auto built = buildMatmulModule(*context, spec);
  if (built && target)
    markTargetFeatures(**built, *target);
  auto module = lowerModule(std::move(built), lower);
  if (!module)
    return module.takeError();
  return moduleText(**module);
}

} // namespace

llvm::Expected<std::string> matmulLoopsText(const matmul::MatmulSpec &spec) {
  return loweredText(spec, lowerMatmulToLoops);
}

llvm::Error refuseQuantizedActivationsOnGpu(const matmul::MatmulSpec &spec) {
  if (!spec.activation)
    return llvm::Error::success();
  auto prologueRefusal = [&](const std::string &why) {
    return compileError("'" + matmul::printMatmulSpec(spec) +
                        "' runs prologues in front of its activations' "
                        "quantize, and lowbit has no GPU kernel for that "
                        "pair yet: " +
                        why +
                        "; run it with --backend cpu (docs/matmul-gpu.md, "
                        "\"Prologues\")");
  };
  // Behind prologues: a front quantize kernel, then the W8A8 or the FP4
  // GEMM (GpuMatmulFrontQuantize.h).
  if (!spec.prologues.empty())
    if (std::string front = frontQuantizeRefusal(*spec.activation);
        !front.empty())
      return prologueRefusal(front);
  // W4A4 (nvfp4 x nvfp4, mxfp4 x mxfp4): the FP4 GEMM (GpuMatmulFp4.h).
  if (fp4GemmRefusal(spec.scheme, *spec.activation).empty())
    return llvm::Error::success();
  std::string why = quantizedGemmRefusal(spec.scheme, *spec.activation);
  if (why.empty())
    return llvm::Error::success();
  return compileError("'" + matmul::printMatmulSpec(spec) +
                      "' quantizes its activations, and lowbit's GPU kernel "
                      "for quantized activations cannot run it: " +
                      why +
                      "; run it with --backend cpu (docs/matmul.md, "
                      "\"Quantized activations\")");
}

namespace {

/// The tensor instruction the W8A8 GEMM of `spec` issues.
TensorInstruction quantizedGemmInstruction(const matmul::MatmulSpec &spec) {
  return quantizedGemmIsFloat(*spec.activation) ? TensorInstruction::MmaSyncF8
                                                : TensorInstruction::MmaSyncS8;
}

/// `target` with its PTX version raised to what the W8A8 GEMM's
/// instruction needs (the FP8 mma.sync: PTX 8.4, above sm_89's default
/// 8.1), so that `--target sm_89` compiles it; unchanged otherwise.
Target quantizedGemmTarget(const matmul::MatmulSpec &spec, Target target) {
  if (!spec.activation || !target.isNvidia() ||
      !quantizedGemmRefusal(spec.scheme, *spec.activation).empty())
    return target;
  TensorInstruction instruction = quantizedGemmInstruction(spec);
  for (const TensorInstructionInfo &info : tensorInstructionTable())
    if (info.instruction == instruction)
      for (const ChipRequirement &requirement : info.anyOf) {
        Target raised = target;
        raised.ptxVersion =
            std::max(raised.ptxVersion, requirement.minPtxVersion);
        if (targetHas(raised, instruction))
          return raised;
      }
  return target;
}

} // namespace

llvm::Expected<std::string> matmulGpuText(const matmul::MatmulSpec &spec,
                                          const Target *target) {
  if (llvm::Error refusal = refuseQuantizedActivationsOnGpu(spec))
    return refusal;
  return loweredText(spec, lowerMatmulForGpu, target);
}

std::string matmulTargetRefusal(const matmul::MatmulSpec &spec,
                                const Target &target) {
  if (!target.isNvidia())
    return "the matmul's GPU kernels need an NVIDIA target, got '" +
           target.str() + "'";
  // A pair without a GPU kernel is refused by
  // refuseQuantizedActivationsOnGpu, with its reason.
  if (spec.activation &&
      quantizedGemmRefusal(spec.scheme, *spec.activation).empty()) {
    TensorInstruction instruction = quantizedGemmInstruction(spec);
    if (targetHas(quantizedGemmTarget(spec, target), instruction))
      return "";
    std::string mnemonic;
    for (const TensorInstructionInfo &info : tensorInstructionTable())
      if (info.instruction == instruction)
        mnemonic = std::string(info.ptxMnemonic);
    return "the quantized-activation GEMM needs " + mnemonic + ", which '" +
           target.str() + "' lacks (" +
           (instruction == TensorInstruction::MmaSyncF8
                ? "FP8 mma.sync: sm_89 or newer"
                : "s8 mma.sync: sm_80 or newer") +
           ")";
  }
  if (spec.activation &&
      fp4GemmRefusal(spec.scheme, *spec.activation).empty() &&
      !targetHas(target, TensorInstruction::MmaSyncF16))
    return "the matmul's FP4 GEMM (W4A4, the codes' values in bf16) needs "
           "mma.sync m16n8k16 .bf16, which '" +
           target.str() + "' lacks";
  if (spec.activation)
    return "";
  // Every chip lowbit supports is sm_80 or newer and has it; the GEMM's
  // requirement is still stated where a target is chosen.
  if (spec.input != ValueType::F32 &&
      !targetHas(target, TensorInstruction::MmaSyncF16))
    return "the matmul's GEMM (an f16/bf16 X, M > 16) needs mma.sync "
           "m16n8k16, which '" +
           target.str() + "' lacks";
  return "";
}

llvm::Expected<GpuCompilation>
compileMatmulToPtx(const matmul::MatmulSpec &spec, const Target &target,
                   const GpuCompileOptions &options) {
  if (std::string why = matmulTargetRefusal(spec, target); !why.empty())
    return compileError(why);
  if (llvm::Error refusal = refuseQuantizedActivationsOnGpu(spec))
    return refusal;
  ContextLease context = borrowContext();
  auto module = buildMatmulModule(*context, spec);
  if (!module)
    return module.takeError();
  Target compiled = quantizedGemmTarget(spec, target);
  markTargetFeatures(**module, compiled);
  return compileModuleForGpu(**module, lowerMatmulForGpu, compiled, options);
}

llvm::Expected<std::unique_ptr<MatmulCpuKernel>>
compileMatmulForCpu(const matmul::MatmulSpec &spec) {
  auto executable = loopsToHost([&](MLIRContext &context) {
    return lowerModule(buildMatmulModule(context, spec), lowerMatmulToLoops);
  });
  if (!executable)
    return executable.takeError();
  return std::make_unique<MatmulCpuKernel>(
      spec, std::move(*executable),
      [](const matmul::MatmulSpec &spec,
         const std::vector<HostBuffer> &buffers) -> llvm::Error {
        std::vector<std::array<int64_t, 2>> shapes;
        for (const HostBuffer &buffer : buffers)
          shapes.push_back({buffer.rows, buffer.cols});
        std::string error;
        if (!matmulSizesOf(spec, shapes, &error))
          return compileError(error);
        return llvm::Error::success();
      });
}

} // namespace lowbit::compiler
