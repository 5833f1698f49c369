//===- Passes.td - lowbit lowering passes ------------------*- tablegen -*-===//
//
// One pass per file; the file name is the pass's C++ name. Target-
// independent passes know no chip; only the GPU-tail passes (those whose
// names say nvvm/native) read a target.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_PASSES_TD
#define LOWBIT_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowbitFlattenLeadingDims
    : Pass<"lowbit-flatten-leading-dims", "mlir::ModuleOp"> {
  let summary = "Make N-D lowbit.quantize/dequantize 2-D";
  let description = [{
    A quantize or dequantize of a tensor of rank > 2 is the model's [rows,
    cols] with the leading axes flattened into rows. This pass collapses
    the input (and the codes, scales and zero points of rank > 2) with
    tensor.collapse_shape, makes the op 2-D, and expands its N-D results
    back with tensor.expand_shape, so that every later lowering sees 2-D
    ops only. Run it first (docs/quantization.md, N-D tensors).
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect",
                           "mlir::memref::MemRefDialect"];
}

def LowbitToLoops : Pass<"lowbit-to-loops", "mlir::ModuleOp"> {
  let summary = "Lower lowbit.quantize and lowbit.dequantize to loops";
  let description = [{
    Rewrites each quantize/dequantize op into scf loops over memrefs that
    carry the scheme's indexing, scale computation (static or dynamic, every
    granularity), zero points, packing and layouts. Format conversions are
    emitted as scalar `lowbit.encode` / `lowbit.decode` ops, which a later
    pass expands into arithmetic or replaces with a native instruction.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
    "mlir::memref::MemRefDialect", "mlir::math::MathDialect",
    "mlir::bufferization::BufferizationDialect"
  ];
}

def LowbitKiviToLoops : Pass<"lowbit-kivi-to-loops", "mlir::ModuleOp"> {
  let summary = "Lower the KIVI cache ops (append, dequantize, decode "
                "attention) to loops";
  let description = [{
    kivi_append becomes two scf.parallel nests, in order: the flush (each
    group of G tokens the append completes, read from the residual ring and
    the input, quantized with kv/KvKivi.h's min/max arithmetic through
    ScaleMath) and the ring write (the new tokens still in the window).
    kivi_dequantize is one scf.parallel over (sequence, head, token) rows
    (docs/kv-kernels.md, KIVI). kivi_decode_attention is two flat
    scf.parallel nests, the splits then their merge, reading the codes or
    the ring where the loops read K and V (docs/decode-attention.md, KIVI).
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
    "mlir::memref::MemRefDialect", "mlir::math::MathDialect"
  ];
}

def LowbitKvToLoops : Pass<"lowbit-kv-to-loops", "mlir::ModuleOp"> {
  let summary = "Lower lowbit.kv_append and lowbit.kv_dequantize to loops";
  let description = [{
    Rewrites each KV-cache op into one scf.parallel over (sequence, head,
    token) that finds the token's cache row (contiguous, or paged through
    the block table; rows outside the cache are skipped) and runs its
    groups with scf.for loops, in kv/KvQuantize.cpp's arithmetic and order
    (docs/kv-kernels.md). FP8 conversions are scalar lowbit.encode/decode.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
    "mlir::memref::MemRefDialect", "mlir::math::MathDialect"
  ];
}

def LowbitFusionToLoops : Pass<"lowbit-fusion-to-loops", "mlir::ModuleOp"> {
  let summary = "Lower lowbit.fused kernels' prologues to loops";
  let description = [{
    Inlines every `lowbit.fused` region into its function (the kernel
    boundary is the function from here on), bufferizes the prologue's
    linalg and tensor ops with One-Shot Bufferize (lowbit ops stay on
    tensors and read the prologue's result through a
    `bufferization.to_tensor`), and lowers the linalg ops to scf loops:
    parallel dimensions to scf.parallel, RMSNorm's row reduction to an
    scf.for in column order. Run it before lowbit-to-loops
    (docs/fusion.md).
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
    "mlir::memref::MemRefDialect", "mlir::math::MathDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
    "mlir::affine::AffineDialect"
  ];
}

def LowbitAttentionToLoops : Pass<"lowbit-attention-to-loops", "mlir::ModuleOp"> {
  let summary = "Lower lowbit.kv_decode_attention to split-K loops";
  let description = [{
    Rewrites each decode attention over a quantized KV cache into two
    scf.parallel nests: one unit per (sequence, kv head, split) computes the
    split's max logit, sum of weights and weighted values for every query
    head of its group (the codes dequantized inside the q.K and p.V loops,
    exp is lowbit's prologueExp) into the partials result; one unit per
    (sequence, query head) merges the splits in order. The order is the
    kernel contract (docs/decode-attention.md); the CPU tail and the GPU
    tail's mapping of these loops run the same arithmetic.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
    "mlir::memref::MemRefDialect", "mlir::math::MathDialect",
    "mlir::bufferization::BufferizationDialect"
  ];
}

def LowbitToGpu : Pass<"lowbit-to-gpu", "mlir::ModuleOp"> {
  let summary = "Map lowbit kernels to bandwidth-shaped gpu.launch";
  let description = [{
    Lowers the ops whose access pattern it covers straight to gpu.launch
    bodies with an explicit thread mapping: 16-byte vector loads and
    stores per lane, warp-shuffle reductions of the group statistics,
    scales stored by one lane per group, and lowbit.encode / decode of
    element pairs (vector<2xf32>), so that lowbit-native-cvt gives one x2
    cvt per two values. It covers lowbit.quantize / dequantize, fused row
    kernels (lowbit.fused), lowbit.kv_append / kv_dequantize (one warp per
    token row) and lowbit.kv_decode_attention's split stage (FlashDecoding:
    one block per sequence, kv head and split). Ops it does not cover are
    left for the loop passes (docs/gpu.md lists both sets).
    Target-independent: the chip enters later, in lowbit-native-cvt.
  }];
  let options = [
    Option<"threadsPerBlock", "threads-per-block", "int64_t", "256",
           "threads per block of every launch (a multiple of 32)">
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
    "mlir::memref::MemRefDialect", "mlir::math::MathDialect",
    "mlir::gpu::GPUDialect", "mlir::vector::VectorDialect",
    "mlir::bufferization::BufferizationDialect", "mlir::NVVM::NVVMDialect"
  ];
}

def LowbitExpandCodecs : Pass<"lowbit-expand-codecs"> {
  let summary = "Expand lowbit.encode and lowbit.decode into arithmetic";
  let description = [{
    Replaces every scalar format conversion with plain integer and float
    arithmetic, bit-exact to PTX cvt semantics (docs/numerics.md), built
    from the format model's parameters. Runs on any target.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def LowbitNativeConversions : Pass<"lowbit-native-cvt"> {
  let summary = "Use the chip's cvt instructions where it has them";
  let description = [{
    Replaces lowbit.encode/decode ops that the target chip and PTX version
    can do natively (e4m3x2/e5m2x2 from sm_89 with PTX 8.1; e2m1x2, e2m3x2,
    e3m2x2 and ue8m0x2 on sm_100a, sm_103a and sm_120a) with NVVM ops. The
    rest are left for lowbit-expand-codecs.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_90a\"", "target chip">,
    Option<"ptxVersion", "ptx", "unsigned", "0",
           "PTX ISA version times ten (0: the chip's default)">
  ];
  let dependentDialects = [
    "mlir::NVVM::NVVMDialect", "mlir::LLVM::LLVMDialect",
    "mlir::arith::ArithDialect", "mlir::vector::VectorDialect"
  ];
}

#endif // LOWBIT_LOWERING_PASSES_TD
