//===- LowbitMatmulOps.td - The quantized-weight matmul ---*- tablegen -*-===//
//
// `lowbit.matmul`: Y = X . dequant(W)^T (+ bias), the weights read in the
// dequantize kernel's buffers and dequantized inside the K loop. The
// arithmetic and its one order are in docs/matmul.md
// (matmul/MatmulOrder.h is the same in plain C++).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_MATMUL_OPS_TD
#define LOWBIT_MATMUL_OPS_TD

include "dialect/LowbitAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// The weights are 2-D [N, K]: codes of at most 8 bits, scales stored as
// themselves or as byte codes (e8m0, ue4m3), zero points like codes.
def Lowbit_MatmulValueTensor : TensorRankOf<[F32, F16, BF16], [2]>;
def Lowbit_MatmulCodesTensor : TensorRankOf<[I8], [2]>;
def Lowbit_MatmulScalesTensor : TensorRankOf<[F32, F16, BF16, I8], [2]>;
def Lowbit_MatmulGlobalTensor : TensorRankOf<[F32], [1, 2]>;
def Lowbit_MatmulBiasTensor : TensorRankOf<[F32], [1]>;

def Lowbit_MatmulOp : Lowbit_Op<"matmul", [Pure, AttrSizedOperandSegments]> {
  let summary = "Matmul with quantized weights: Y = X . dequant(W)^T + bias";
  let description = [{
    `Y[M, N] = X[M, K] . dequant(W)[N, K]^T (+ bias[N])`, accumulated in f32
    in the order of docs/matmul.md.

    The weights are a set quantized with `scheme` from an `[N, K]` weight:
    rows are output channels and groups or blocks run along K. `codes`,
    `scales`, `zeros` (when the scheme has a zero point) and `global` (when
    it has a second-level scale) are exactly `lowbit.dequantize`'s operands
    for a `[N, K]` result, checked the same way. The scheme must be a weight
    scheme (`lowbit::matmul::weightSchemeRefusal`): codes of at most 8 bits,
    scales per tensor, per output channel, in groups along K or in blocks;
    a group that straddles K needs a scheme that allows a tail.

    - `x`: `[M, K]`, f32, f16 or bf16;
    - `bias`: `[N]` f32 (optional);
    - result: `[M, N]`, f32, f16 or bf16 (any of them, whatever X's).

    With `act_scheme` (W8A8, W4A4; docs/matmul.md, "Quantized
    activations"), X is quantized with that scheme inside the op (its scales
    computed from X) and the product runs on the two sides' codes, in K
    blocks scaled in f32; the pair must pass
    `lowbit::matmul::activationPairRefusal` (both symmetric, both integer or
    both float, equal scale extents along K).

    With `prologues` as well (canonical prologue texts, format/Prologue.h:
    `["rmsnorm(eps=1e-06)", "hadamard(128)"]`), X goes through that chain
    before its quantize, exactly as `prologue | quantize` does
    (docs/fusion.md); `prologue_inputs` are the chain's side tensors in
    order (an RMSNorm weight, a smoothing vector: `[1, K]` in X's dtype).
    The chain keeps X's width and writes nothing else (`silu_mul` and
    `add_rmsnorm` are refused).

    ```mlir
    %y = lowbit.matmul %x, %codes scales(%s : tensor<96x2xf16>)
        zeros(%z : tensor<96x2xi8>) bias(%b : tensor<96xf32>)
        {scheme = #lowbit.scheme<"int4_g128">}
        : tensor<?x256xbf16>, tensor<96x128xi8> -> tensor<?x96xbf16>
    %y8 = lowbit.matmul %x, %codes8 scales(%s8 : tensor<96x1xf32>)
        {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
                  scale = #lowbit.scale<per_token>, packing = byte>,
         act_scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
                  scale = #lowbit.scale<per_token>, packing = byte>}
        : tensor<?x256xbf16>, tensor<96x256xi8> -> tensor<?x96xbf16>
    ```
  }];
  let arguments = (ins Lowbit_MatmulValueTensor:$x,
                       Lowbit_MatmulCodesTensor:$codes,
                       Lowbit_MatmulScalesTensor:$scales,
                       Optional<Lowbit_MatmulCodesTensor>:$zeros,
                       Optional<Lowbit_MatmulGlobalTensor>:$global,
                       Optional<Lowbit_MatmulBiasTensor>:$bias,
                       Variadic<Lowbit_MatmulValueTensor>:$prologue_inputs,
                       Lowbit_SchemeAttr:$scheme,
                       OptionalAttr<Lowbit_SchemeAttr>:$act_scheme,
                       OptionalAttr<StrArrayAttr>:$prologues);
  let results = (outs Lowbit_MatmulValueTensor:$result);
  let assemblyFormat = [{
    $x `,` $codes `scales` `(` $scales `:` type($scales) `)`
    (`zeros` `(` $zeros^ `:` type($zeros) `)`)?
    (`global` `(` $global^ `:` type($global) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`prologue_inputs` `(` $prologue_inputs^ `:` type($prologue_inputs) `)`)?
    attr-dict `:` type($x) `,` type($codes) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The weights' scheme (the model's; named when it is a named scheme).
    ::lowbit::Scheme getWeightScheme();
    /// The activations' scheme when X is quantized (act_scheme).
    std::optional<::lowbit::Scheme> getActivationScheme();
    /// The prologues in front of X's quantize (empty without `prologues`).
    std::vector<::lowbit::Prologue> getPrologueChain();
    /// The chain's checks (verify): act_scheme, parseable texts, a chain
    /// the kernels run, one [1, K] side tensor of X's dtype per operand.
    ::mlir::LogicalResult verifyPrologues(int64_t k);
    /// X's and Y's dtypes in the model's terms.
    ::lowbit::ValueType getInputDtype();
    ::lowbit::ValueType getOutputDtype();
    /// Static sizes, or ShapedType::kDynamic: M and K from X, N from the
    /// result (or the codes' rows).
    int64_t getM();
    int64_t getN();
    int64_t getK();
  }];
  let hasVerifier = 1;
}

#endif // LOWBIT_MATMUL_OPS_TD
