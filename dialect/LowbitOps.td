//===- LowbitOps.td - lowbit quantize and dequantize ops ---*- tablegen -*-===//
//
// Ops work on 2-D ranked tensors [rows, cols], the shape the scheme model
// (format/Scheme.h) describes. Which side tensors exist (scales, zero
// points, a global scale) and whether they are operands or results follows
// from the scheme; the verifiers check that and every shape against
// lowbit::codesShape / lowbit::scaleShape.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_OPS_TD
#define LOWBIT_OPS_TD

include "dialect/LowbitAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lowbit_ValueTensor : TensorRankOf<[F32, F16, BF16], [2]>;
// i16 holds codes of formats wider than 8 bits (the model allows up to 16).
def Lowbit_CodesTensor : TensorRankOf<[I8, I16], [2]>;
// Floating scales are stored as themselves, e8m0/ue4m3 scales as byte codes.
def Lowbit_ScalesTensor : TensorRankOf<[F32, F16, BF16, I8], [2]>;
def Lowbit_ZerosTensor : TensorRankOf<[I8, I16], [2]>;
def Lowbit_GlobalTensor : TensorRankOf<[F32], [1, 2]>;

def Lowbit_QuantizeOp : Lowbit_Op<"quantize",
    [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "Quantizes a 2-D tensor with a scheme";
  let description = [{
    Quantizes `input` (`[rows, cols]` of f32, f16 or bf16) with `scheme`.

    Results, in order:
    - `codes`: the packed codes, `lowbit::codesShape(rows, cols)` bytes
      (`i8`; `i16` for formats wider than 8 bits). Nibble packing puts two
      codes in a byte, element 0 in the low nibble.
    - `scales` (dynamic mode only): `lowbit::scaleShape(rows, cols)`
      elements, f32/f16/bf16 as the scale type says, or `i8` codes for
      e8m0 and ue4m3 scales.
    - `zeros` (dynamic mode, schemes with a zero point): the scale's shape,
      in the codes' integer type.
    - `global` (schemes with a global scale, when it is not passed in):
      `tensor<1xf32>` or `tensor<1x1xf32>`, in the convention the scheme
      names (`decode` or `encode`).

    A static-mode scheme takes its scales (and zero points, and global
    scale) as operands instead: `scales(...)`, `zeros(...)`, `global(...)`.
    A dynamic-mode scheme with a global scale either computes it from the
    tensor's amax (a `global` result) or takes it as a `global(...)` operand,
    as vLLM passes the NVFP4 global scale; it never does both.

    ```mlir
    // Dynamic MXFP4: codes and e8m0 scales are produced.
    %codes, %scales = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<128x256xf32> -> tensor<128x128xi8> scales tensor<128x8xi8>
    // Static per-tensor FP8: the scale is an operand.
    %codes = lowbit.quantize %x scales(%s : tensor<1x1xf32>)
        {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
                    scale = #lowbit.scale<per_tensor, mode = static>,
                    packing = byte>}
        : tensor<16x64xbf16> -> tensor<16x64xi8>
    ```
  }];
  let arguments = (ins Lowbit_ValueTensor:$input,
                       Optional<Lowbit_ScalesTensor>:$static_scales,
                       Optional<Lowbit_ZerosTensor>:$static_zeros,
                       Optional<Lowbit_GlobalTensor>:$static_global,
                       Lowbit_SchemeAttr:$scheme);
  let results = (outs Lowbit_CodesTensor:$codes,
                      Optional<Lowbit_ScalesTensor>:$scales,
                      Optional<Lowbit_ZerosTensor>:$zeros,
                      Optional<Lowbit_GlobalTensor>:$global);
  let assemblyFormat = [{
    $input
    (`scales` `(` $static_scales^ `:` type($static_scales) `)`)?
    (`zeros` `(` $static_zeros^ `:` type($static_zeros) `)`)?
    (`global` `(` $static_global^ `:` type($static_global) `)`)?
    attr-dict `:` type($input) `->` type($codes)
    (`scales` type($scales)^)?
    (`zeros` type($zeros)^)?
    (`global` type($global)^)?
  }];
  let hasVerifier = 1;
}

def Lowbit_DequantizeOp : Lowbit_Op<"dequantize",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "Dequantizes codes back to a 2-D float tensor";
  let description = [{
    The inverse of `lowbit.quantize`: decodes `codes` with `scales` (and
    `zeros` when the scheme has a zero point, and `global` when it has a
    global scale) into a `[rows, cols]` tensor of f32, f16 or bf16.

    The logical shape comes from the result type: nibble packing stores
    `ceil(cols / 2)` bytes per row, so the codes alone cannot tell an odd
    column count from the next even one. Every operand's shape is checked
    against `lowbit::codesShape` / `lowbit::scaleShape` for that shape.

    ```mlir
    %y = lowbit.dequantize %codes scales(%scales : tensor<128x16xi8>)
        global(%g : tensor<1xf32>) {scheme = #lowbit.scheme<"nvfp4">}
        : tensor<128x128xi8> -> tensor<128x256xf32>
    ```
  }];
  let arguments = (ins Lowbit_CodesTensor:$codes,
                       Lowbit_ScalesTensor:$scales,
                       Optional<Lowbit_ZerosTensor>:$zeros,
                       Optional<Lowbit_GlobalTensor>:$global,
                       Lowbit_SchemeAttr:$scheme);
  let results = (outs Lowbit_ValueTensor:$result);
  let assemblyFormat = [{
    $codes `scales` `(` $scales `:` type($scales) `)`
    (`zeros` `(` $zeros^ `:` type($zeros) `)`)?
    (`global` `(` $global^ `:` type($global) `)`)?
    attr-dict `:` type($codes) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // LOWBIT_OPS_TD
