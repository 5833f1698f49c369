//===- LowbitAttentionOps.td - Decode attention over a KV cache -*- tablegen -*-===//
//
// `lowbit.kv_decode_attention`: one query token per sequence attends over a
// quantized KV cache (kv/, docs/kv-cache.md), with the dequantization fused
// into the q.K and p.V loops and the tokens cut into splits (FlashDecoding).
// The arithmetic and its order are in docs/decode-attention.md.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_ATTENTION_OPS_TD
#define LOWBIT_ATTENTION_OPS_TD

include "dialect/LowbitAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lowbit_KvQueryTensor : TensorRankOf<[F32, F16, BF16], [3]>;
def Lowbit_KvCodesTensor : TensorRankOf<[I8], [4]>;
def Lowbit_KvScalesTensor : TensorRankOf<[F32], [1, 4]>;
def Lowbit_KvLengthsTensor : TensorRankOf<[I32], [1]>;
def Lowbit_KvBlockTableTensor : TensorRankOf<[I32], [2]>;
def Lowbit_KvOutputTensor : TensorRankOf<[F32], [3]>;
def Lowbit_KvPartialsTensor : TensorRankOf<[F32], [5]>;

def Lowbit_KvDecodeAttentionOp : Lowbit_Op<"kv_decode_attention",
    [Pure]> {
  let summary = "Decode attention over a quantized KV cache, split-K";
  let description = [{
    One query token per sequence: `out[b, h] = softmax(softmax_scale *
    q[b, h] . K[b, kvh]^T) V[b, kvh]` over the first `seq_lens[b]` tokens,
    with `kvh = h / (q_heads / kv_heads)` (grouped-query heads). A sequence
    of length 0 gives zeros.

    Operands:
    - `query`: `[batch, q_heads, head_dim]`, f32, f16 or bf16;
    - `key_codes`, `value_codes`: i8 codes (int8, or FP8 codes as bytes).
      Contiguous: `[batch, kv_heads, max_tokens, head_dim]`. Paged (a
      `block_table` is given): `[pages, kv_heads, 16, head_dim]`, token t of
      sequence b at page `block_table[b, t / 16]`, slot `t % 16`;
    - `key_scales`, `value_scales`: f32. int8 groups (`scale = "per_group"`):
      the codes' shape with the last axis `ceil(head_dim / group_size)`.
      FP8: `[1]` (`"per_tensor"`) or `[kv_heads]` (`"per_head"`);
    - `seq_lens`: `[batch]` i32, each in [0, max_tokens];
    - `block_table`: `[batch, max_blocks]` i32 (paged only).

    Attributes: `format` (`#lowbit.int<"int8">`, `#lowbit.float<"e4m3">` or
    `#lowbit.float<"e5m2">`), `scale`, `group_size` and `convention`
    (`"multiplier"`: x = q / s, or `"divisor"`: x = q * s; int8 only),
    `softmax_scale`, and `split_tokens`, the tokens of one split. `dot`
    (`fma`, the default, or `mma`) is how a GPU kernel forms q.K: fma
    chains in the documented order, or mma.sync f16 x f16 -> f32 (FP8
    codes, an f16 or bf16 query, head_dim a multiple of 16); loops keep
    the fma order either way.

    Results: `output` `[batch, q_heads, head_dim]` f32, and `partials`
    `[batch, kv_heads, splits, q_heads / kv_heads, head_dim + 2]` f32 with
    `splits = ceil(max_tokens / split_tokens)`: each split's accumulator,
    max logit and sum of weights (the kernel's scratch, explicit so that
    every backend writes it where the caller says).

    ```mlir
    %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens
        {format = #lowbit.float<"e4m3">, scale = "per_head",
         softmax_scale = 0.125 : f32, split_tokens = 256 : i64}
        : tensor<2x8x64xbf16>, tensor<2x2x300x64xi8>, tensor<2xf32>,
          tensor<2x2x300x64xi8>, tensor<2xf32>, tensor<2xi32>
        -> tensor<2x8x64xf32>, tensor<2x2x2x4x66xf32>
    ```
  }];
  let arguments = (ins Lowbit_KvQueryTensor:$query,
                       Lowbit_KvCodesTensor:$key_codes,
                       Lowbit_KvScalesTensor:$key_scales,
                       Lowbit_KvCodesTensor:$value_codes,
                       Lowbit_KvScalesTensor:$value_scales,
                       Lowbit_KvLengthsTensor:$seq_lens,
                       Optional<Lowbit_KvBlockTableTensor>:$block_table,
                       Lowbit_FormatAttrInterface:$format,
                       StrAttr:$scale,
                       DefaultValuedAttr<I64Attr, "64">:$group_size,
                       DefaultValuedAttr<StrAttr, "\"multiplier\"">:$convention,
                       F32Attr:$softmax_scale,
                       I64Attr:$split_tokens,
                       DefaultValuedAttr<StrAttr, "\"fma\"">:$dot);
  let results = (outs Lowbit_KvOutputTensor:$output,
                      Lowbit_KvPartialsTensor:$partials);
  let assemblyFormat = [{
    $query `,` $key_codes `,` $key_scales `,` $value_codes `,` $value_scales
    `,` $seq_lens (`block_table` `(` $block_table^ `:` type($block_table) `)`)?
    attr-dict `:` type($query) `,` type($key_codes) `,` type($key_scales) `,`
    type($value_codes) `,` type($value_scales) `,` type($seq_lens)
    `->` type($output) `,` type($partials)
  }];
  let extraClassDeclaration = [{
    bool isPaged() { return bool(getBlockTable()); }
    /// q_heads / kv_heads (0 when either is dynamic).
    int64_t getGroupHeads();
  }];
  let hasVerifier = 1;
}

#endif // LOWBIT_ATTENTION_OPS_TD
