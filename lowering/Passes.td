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

def LowbitMatmulToLoops : Pass<"lowbit-matmul-to-loops", "mlir::ModuleOp"> {
  let summary = "Lower lowbit.matmul to the documented order's loops";
  let description = [{
    Rewrites each quantized-weight matmul into a lowbit.dequantize of its
    weights into an [N, K] scratch of X's dtype (left for lowbit-to-loops,
    which runs after it) and one scf.parallel unit per (m, n) running the
    order of docs/matmul.md: 32 slices of 32-wide chunks, an fma chain per
    slice, the slices summed in order, the bias added, the result rounded to
    Y's dtype. The CPU tail runs it; it is bit for bit the ordered reference
    (matmul/MatmulOrder.h). The result must be materialized into a memref
    (the kernel function's parameter).
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

//===----------------------------------------------------------------------===//
// The GPU tail's own rewrites (lowering/GpuTail.h runs them in the
// lowbit-gpu-tail pipeline, lowering/Pipelines.h). Each is target
// independent; they prepare the loops for MLIR's GPU mapping passes and
// clean up after outlining.
//===----------------------------------------------------------------------===//

def LowbitGpuReductionsToAtomics
    : Pass<"lowbit-gpu-reductions-to-atomics", "mlir::ModuleOp"> {
  let summary = "Split each scf.parallel reduction into an init kernel and "
                "an atomic one";
  let description = [{
    An scf.parallel with results (lowbit-to-loops' dynamic per-tensor
    amax/min/max) becomes three steps, all of which become kernels: a
    one-thread loop storing the init value into a private memref.global
    (i32 bits, one per reduced value); the loop without results, folding
    each value into the global with memref.generic_atomic_rmw whose body is
    the scf.reduce region; and loads of the globals in place of the
    results. lowbit's reductions are max/min of non-NaN values, so the
    result is bit-identical to the sequential scan. Refuses a reduction
    nested in another scf.parallel and non-32-bit reduced values.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def LowbitGpuWrapHostStores
    : Pass<"lowbit-gpu-wrap-host-stores", "mlir::ModuleOp"> {
  let summary = "Put each memref.store left on the host into a one-thread "
                "scf.parallel";
  let description = [{
    A store outside every scf.parallel and gpu.launch (e.g. the per-tensor
    scale computed from the amax) would run on the host against a device
    buffer; wrapped in a 1-iteration scf.parallel it becomes a kernel like
    the rest, and lowbit-gpu-sink-host-glue moves the values it needs in.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect"];
}

def LowbitGpuTileForThreads
    : Pass<"lowbit-gpu-tile-for-threads", "mlir::ModuleOp"> {
  let summary = "Tile each outermost scf.parallel for the thread block";
  let description = [{
    Tiles every outermost scf.parallel so that its innermost dimension
    becomes `threads-per-block` threads and the tile loop maps to blocks
    (gpu-map-parallel-loops). Bounds that do not divide are guarded with
    scf.if, so the thread count stays a constant.
  }];
  let options = [
    Option<"threadsPerBlock", "threads-per-block", "int64_t", "128",
           "threads along the innermost parallel dimension">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect"];
}

def LowbitGpuExpandLibdeviceMath
    : Pass<"lowbit-gpu-expand-libdevice-math", "mlir::ModuleOp"> {
  let summary = "Expand f32 math.absf, math.copysign and math.roundeven "
                "into bit arithmetic";
  let description = [{
    convert-gpu-to-nvvm turns these three into libdevice calls, which stay
    unresolved externs when no CUDA toolkit is found at run time. All three
    are exact in integer and f32 arithmetic: absf clears the sign bit,
    copysign takes x's magnitude and y's sign bit, and roundeven is
    (|x| + 2^23) - 2^23 (ties to even in the f32 adder) with the sign put
    back; |x| >= 2^23, inf and NaN are left as they are.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def LowbitGpuSinkHostGlue
    : Pass<"lowbit-gpu-sink-host-glue", "mlir::ModuleOp"> {
  let summary = "Clone host-side loads and pure arithmetic into the "
                "gpu.launch ops that use them";
  let description = [{
    Host glue that reads a buffer (NVFP4's global scale, a reduction's
    global) must run on the device: each memref.load, memref.dim,
    memref.get_global or pure op a gpu.launch uses from above is cloned to
    the top of its body, operands after their users, and the host
    originals left dead are erased. gpu-kernel-outlining's own sinking
    only takes ops whose operands the kernel already uses. Kernels on one
    stream run in order, so a load at kernel start sees what earlier
    kernels wrote.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def LowbitGpuCheckNoHostMemory
    : Pass<"lowbit-gpu-check-no-host-memory", "mlir::ModuleOp"> {
  let summary = "Refuse memory accesses still outside the kernels";
  let description = [{
    After the mapping and lowbit-gpu-sink-host-glue, a memref.load or
    memref.store outside every gpu.launch and gpu.module would run on the
    host against device buffers: the pass fails with an error on it
    instead of letting wrong code through.
  }];
}

def LowbitGpuOutlineKernels
    : Pass<"lowbit-gpu-outline-kernels", "mlir::ModuleOp"> {
  let summary = "gpu-kernel-outlining, keeping each launch's residency";
  let description = [{
    Runs upstream gpu-kernel-outlining, which drops a gpu.launch's
    discardable attributes, and gives each kernel whose launch carried
    `lowbit.min_blocks_per_sm = N` (kit::requireBlocksPerSm) the
    `nvvm.minctasm = N` that convert-gpu-to-nvvm keeps and NVPTX prints as
    `.minnctapersm N`: ptxas then keeps the kernel within the registers
    that let N blocks share an SM. Each gpu.launch becomes one
    gpu.launch_func in its place, so the launches and the new launch_func
    ops pair up in walk order.
  }];
}

def LowbitGpuMergeModules
    : Pass<"lowbit-gpu-merge-modules", "mlir::ModuleOp"> {
  let summary = "Move every outlined kernel into one gpu.module";
  let description = [{
    gpu-kernel-outlining makes one gpu.module per kernel; the runtime loads
    one PTX module per compiled spec. Each kernel is renamed after its
    module (outlined names are unique: <function>_kernel[_N]) and moved
    into the first gpu.module, device globals that outlining copied into
    every module are kept once, and the gpu.launch_func ops are pointed at
    the merged module.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def LowbitGpuAlignWorkgroup
    : Pass<"lowbit-gpu-align-workgroup", "mlir::ModuleOp"> {
  let summary = "Align every kernel's shared-memory buffers to 16 bytes";
  let description = [{
    convert-gpu-to-nvvm gives a workgroup buffer its element type's
    alignment (`.shared .align 1` for byte codes), but 16-byte cp.async,
    ldmatrix and vector accesses of shared tiles need 16-byte aligned
    addresses, and a buffer placed after another one is aligned only as
    its own declaration says. Every workgroup attribution of every gpu.func
    gets `llvm.align = 16` (a larger one is kept).
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def LowbitGpuRelaxAtomics
    : Pass<"lowbit-gpu-relax-atomics", "mlir::ModuleOp"> {
  let summary = "Make the kernels' LLVM atomics relaxed and device-scoped";
  let description = [{
    The kernels' atomics only combine values within one launch (the next
    kernel on the stream sees them through the launch boundary), so they
    need neither ordering nor system scope: every llvm.atomicrmw and
    llvm.cmpxchg in a gpu.module becomes monotonic with syncscope
    "device", instead of LLVM's default acq_rel/seq_cst at system scope,
    which NVPTX emits as atom.*.sys with a MEMBAR.SYS.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // LOWBIT_LOWERING_PASSES_TD
