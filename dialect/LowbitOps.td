//===- LowbitOps.td - lowbit quantize and dequantize ops ---*- tablegen -*-===//
//
// Ops work on ranked tensors of rank >= 2. The scheme model
// (format/Scheme.h) describes [rows, cols]; a tensor of higher rank has
// groups along its last axis and its leading axes flattened into rows
// (lowbit-flatten-leading-dims makes it 2-D before lowering; codes, and
// scales whose rows follow the input's rows, keep the input's leading
// axes; docs/quantization.md). Which side tensors exist (scales, zero
// points, a global scale) and whether they are operands or results follows
// from the scheme; the verifiers check that and every shape against
// lowbit::codesShape / lowbit::scaleShape.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_OPS_TD
#define LOWBIT_OPS_TD

include "dialect/LowbitAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// A ranked tensor of rank >= 2 with elements of `allowed`.
class Lowbit_TensorOfRank2OrMore<list<Type> allowed> : ShapedContainerType<
    allowed, And<[IsTensorTypePred, HasRankPred,
                  CPred<"::llvm::cast<::mlir::ShapedType>($_self).getRank() "
                        ">= 2">]>,
    "tensor of rank >= 2", "::mlir::RankedTensorType">;

def Lowbit_ValueTensor : Lowbit_TensorOfRank2OrMore<[F32, F16, BF16]>;
// i16 holds codes of formats wider than 8 bits (the model allows up to 16).
def Lowbit_CodesTensor : Lowbit_TensorOfRank2OrMore<[I8, I16]>;
// Floating scales are stored as themselves, e8m0/ue4m3 scales as byte codes.
def Lowbit_ScalesTensor : Lowbit_TensorOfRank2OrMore<[F32, F16, BF16, I8]>;
def Lowbit_ZerosTensor : Lowbit_TensorOfRank2OrMore<[I8, I16]>;
def Lowbit_GlobalTensor : TensorRankOf<[F32], [1, 2]>;

def Lowbit_QuantizeOp : Lowbit_Op<"quantize",
    [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "Quantizes a tensor of rank >= 2 with a scheme";
  let description = [{
    Quantizes `input` (`[rows, cols]` of f32, f16 or bf16) with `scheme`.
    A tensor of higher rank `[d0, ..., dn, cols]` is quantized as `[d0 *
    ... * dn, cols]`: groups run along the last axis; the codes keep the
    input's leading axes, and so do scales and zero points whose rows
    follow the input's rows (one row of scales per row: per token, groups
    along the last axis); other scales keep the model's 2-D shape.

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
  let summary = "Dequantizes codes back to a float tensor of rank >= 2";
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

//===----------------------------------------------------------------------===//
// Scalar format conversions
//===----------------------------------------------------------------------===//

// A scalar or a 1-D vector, so that the GPU tail can hand pairs to the
// packed cvt instructions (e4m3x2, e2m1x2, ...).
def Lowbit_F32OrVector : AnyTypeOf<[F32, VectorOfRankAndType<[1], [F32]>]>;
def Lowbit_CodeOrVector : AnyTypeOf<[I8, I16,
                                     VectorOfRankAndType<[1], [I8, I16]>]>;

def Lowbit_EncodeOp : Lowbit_Op<"encode", [Pure]> {
  let summary = "Converts f32 values to codes of a format";
  let description = [{
    Converts `input` (f32, or a 1-D vector of f32) to codes of `format`
    (`#lowbit.float` or `#lowbit.int`), exactly as `lowbit::encode` does
    (docs/numerics.md): PTX `cvt` semantics, subnormals kept.

    - `saturate` (default `true`): overflow and +-inf give the signed max;
      `false` gives inf, or NaN where the format has no inf.
    - `rounding` (default `"rn"`): `"rn"` (nearest, ties to even), `"rz"`
      (toward zero) or `"rp"` (toward +inf), the PTX rounding names.

    The code is the result's low `bits` bits; the bits above are zero. The
    result is `i8` for formats of up to 8 bits and `i16` for wider ones
    (f16, bf16, parametric formats up to 16 bits), element-wise for vectors.
    Default-valued attributes are not printed.

    ```mlir
    %code = lowbit.encode %x {format = #lowbit.float<"e4m3">} : f32 to i8
    %pair = lowbit.encode %v {format = #lowbit.float<"e2m1">, rounding = "rn"}
        : vector<2xf32> to vector<2xi8>
    ```
  }];
  let arguments = (ins Lowbit_F32OrVector:$input,
                       Lowbit_FormatAttrInterface:$format,
                       DefaultValuedAttr<BoolAttr, "true">:$saturate,
                       DefaultValuedStrAttr<StrAttr, "rn">:$rounding);
  let results = (outs Lowbit_CodeOrVector:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `to` type($result)
  }];
  let extraClassDeclaration = [{
    /// The model's format.
    ::lowbit::Format getModelFormat() { return getFormat().getFormat(); }
    /// The model's options (saturate, rounding); the verifier guarantees
    /// that the rounding name is valid.
    ::lowbit::EncodeOptions getEncodeOptions();
  }];
  let hasVerifier = 1;
}

def Lowbit_DecodeOp : Lowbit_Op<"decode", [Pure]> {
  let summary = "Converts codes of a format to f32 values";
  let description = [{
    The exact value of each code of `format` as f32 (every format value is
    an f32), as `lowbit::Format::decode` gives it. Only the code's low
    `bits` bits are read. Codes are `i8` for formats of up to 8 bits and
    `i16` for wider ones, element-wise for 1-D vectors.

    ```mlir
    %x = lowbit.decode %code {format = #lowbit.float<"e8m0">} : i8 to f32
    ```
  }];
  let arguments = (ins Lowbit_CodeOrVector:$input,
                       Lowbit_FormatAttrInterface:$format);
  let results = (outs Lowbit_F32OrVector:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `to` type($result)
  }];
  let extraClassDeclaration = [{
    ::lowbit::Format getModelFormat() { return getFormat().getFormat(); }
  }];
  let hasVerifier = 1;
}

include "dialect/LowbitFusedOps.td"

#endif // LOWBIT_OPS_TD
