//===- LowbitKiviOps.td - KIVI cache append and dequantize -*- tablegen -*-===//
//
// Ops on one side (keys or values) of a KIVI cache held in memrefs: 2/4-bit
// asymmetric codes with f32 scales and f32 zeros, and a ring of the
// newest tokens in full precision; and decode attention over both sides. The arithmetic is kv/KvKivi.h's, the
// buffers kv/KvKiviKernelSpec.h's (docs/kv-kernels.md, KIVI).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KIVI_OPS_TD
#define LOWBIT_KIVI_OPS_TD

include "dialect/LowbitDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lowbit_KiviTokens : MemRefRankOf<[F16, BF16], [4]>;
def Lowbit_KiviOutput : MemRefRankOf<[F16, BF16, F32], [4]>;
def Lowbit_KiviBytes : MemRefRankOf<[I8], [4]>;
def Lowbit_KiviScales : MemRefRankOf<[F32], [4]>;
def Lowbit_KiviLengths : MemRefRankOf<[I32], [1]>;
def Lowbit_KiviBlockTable : MemRefRankOf<[I32], [2]>;

// kv_kivi_int4 / kv_kivi_int2, G tokens (per_channel) or channels per
// group, the residual window R; integer_zero: lowbit's zero-including
// range and integer zero point instead of KIVI's float zero (mn).
defvar KiviAttrs = (ins StrAttr:$scheme, I64Attr:$group_size,
                    I64Attr:$residual_window, UnitAttr:$per_channel,
                    UnitAttr:$integer_zero);

class Lowbit_KiviOp<string mnemonic> : Lowbit_Op<mnemonic> {
  let extraClassDeclaration = [{
    /// The side's parameters (the verifier has checked them).
    ::lowbit::kv::KiviSide getSide();
    bool isPaged() { return getBlockTable() != nullptr; }
  }];
  let hasVerifier = 1;
}

def Lowbit_KiviAppendOp : Lowbit_KiviOp<"kivi_append"> {
  let summary = "Appends tokens to one side of a KIVI cache, flushing groups";
  let description = [{
    Sequence b holds `lengths[b]` tokens; `input` ([batch, kv_heads,
    new_tokens, head_dim], f16 or bf16) becomes its tokens `lengths[b]`
    onward. As kv/KvKivi.h's KiviStream: every group of `group_size`
    tokens that falls out of the newest `residual_window` tokens with this
    append is quantized (from the residual ring and the input), and the
    tokens still in the window are written to the ring `residual`
    ([batch, kv_heads, R + G, head_dim], token p in slot p mod (R + G)).

    `codes` ([batch, kv_heads, max_tokens, W] or paged [pages, kv_heads,
    16, W] with a block table; W = ceil(D / 2) for int4, D for int2)
    hold the codes per token row. `scales` and `zeros` (both f32; a zero
    is KIVI's group min mn, or with `integer_zero` lowbit's integer zero
    point, docs/kv-kernels.md) have the same shape: with `per_channel`
    (keys) one row of head_dim
    per group, [batch, kv_heads, groups, D] or paged [pages, kv_heads,
    ceil(16 / G), D] (the group starting at p in page table[b, p / 16],
    row (p mod 16) / G); otherwise the codes' layout with ceil(D / G)
    columns.

    ```mlir
    lowbit.kivi_append %k into %codes, %scales, %zeros, %residual at %lengths
        {scheme = "kv_kivi_int4", group_size = 32, residual_window = 128,
         per_channel}
        : memref<2x8x1x128xf16>, memref<2x8x4096x64xi8>,
          memref<2x8x128x128xf32>, memref<2x8x128x128xf32>,
          memref<2x8x160x128xf16>, memref<2xi32>
    ```
  }];
  let arguments = !con((ins Arg<Lowbit_KiviTokens, "", [MemRead]>:$input,
      Arg<Lowbit_KiviBytes, "", [MemWrite]>:$codes,
      Arg<Lowbit_KiviScales, "", [MemWrite]>:$scales,
      Arg<Lowbit_KiviScales, "", [MemWrite]>:$zeros,
      Arg<Lowbit_KiviTokens, "", [MemRead, MemWrite]>:$residual,
      Arg<Lowbit_KiviLengths, "", [MemRead]>:$lengths,
      Arg<Optional<Lowbit_KiviBlockTable>, "", [MemRead]>:$block_table),
      KiviAttrs);
  let assemblyFormat = [{
    $input `into` $codes `,` $scales `,` $zeros `,` $residual `at` $lengths
    (`table` $block_table^)? attr-dict `:` type($input) `,` type($codes) `,`
    type($scales) `,` type($zeros) `,` type($residual) `,` type($lengths)
    (`,` type($block_table)^)?
  }];
}

def Lowbit_KiviDequantizeOp : Lowbit_KiviOp<"kivi_dequantize"> {
  let summary = "Reads a token range of one side of a KIVI cache";
  let description = [{
    Writes `output` [batch, kv_heads, tokens, head_dim] (f16, bf16 or f32):
    token t of sequence b is its token `positions[b] + t` of the
    `lengths[b]` it holds, dequantized from the codes when it is in the
    quantized prefix, else widened from the residual ring, as
    KiviStream::keys()/values() (then rounded to nearest even for f16 and
    bf16). Tokens outside [0, lengths[b]) or outside the cache read 0.

    ```mlir
    lowbit.kivi_dequantize %codes, %scales, %zeros, %residual
        at %positions, %lengths into %out
        {scheme = "kv_kivi_int2", group_size = 32, residual_window = 128}
        : memref<2x8x4096x128xi8>, memref<2x8x4096x4xf32>,
          memref<2x8x4096x4xf32>, memref<2x8x160x128xf16>, memref<2xi32>,
          memref<2xi32>, memref<2x8x64x128xf32>
    ```
  }];
  let arguments = !con((ins Arg<Lowbit_KiviBytes, "", [MemRead]>:$codes,
      Arg<Lowbit_KiviScales, "", [MemRead]>:$scales,
      Arg<Lowbit_KiviScales, "", [MemRead]>:$zeros,
      Arg<Lowbit_KiviTokens, "", [MemRead]>:$residual,
      Arg<Lowbit_KiviLengths, "", [MemRead]>:$positions,
      Arg<Lowbit_KiviLengths, "", [MemRead]>:$lengths,
      Arg<Lowbit_KiviOutput, "", [MemWrite]>:$output,
      Arg<Optional<Lowbit_KiviBlockTable>, "", [MemRead]>:$block_table),
      KiviAttrs);
  let assemblyFormat = [{
    $codes `,` $scales `,` $zeros `,` $residual `at` $positions `,` $lengths
    `into` $output (`table` $block_table^)? attr-dict `:` type($codes) `,`
    type($scales) `,` type($zeros) `,` type($residual) `,` type($positions)
    `,` type($lengths) `,` type($output) (`,` type($block_table)^)?
  }];
}

def Lowbit_KiviQuery : MemRefRankOf<[F16, BF16, F32], [3]>;
def Lowbit_KiviAttentionOutput : MemRefRankOf<[F32], [3]>;
def Lowbit_KiviPartials : MemRefRankOf<[F32], [5]>;

def Lowbit_KiviDecodeAttentionOp : Lowbit_Op<"kivi_decode_attention"> {
  let summary = "Decode attention over a KIVI cache, split-K";
  let description = [{
    One decode step: `output[b, h] = softmax(softmax_scale * q[b, h] .
    K^T) V` over the `lengths[b]` tokens sequence b holds, with K and V
    read from both sides of a KIVI cache exactly as kivi_append writes
    them (keys per channel with `per_channel_keys`, else per token; values
    per token; the same scheme, G and R on both sides). A token of the
    quantized prefix (floor(max(0, T - R) / G) * G tokens) is dequantized
    where the loops read it, a newer one is read from the ring. Query
    head h reads kv head h / (q_heads / kv_heads).

    The tokens are cut into splits of `split_tokens`; `partials` [batch,
    kv_heads, splits, q_heads / kv_heads, head_dim + 2] holds each split's
    accumulator, max logit and sum of weights, merged into `output`
    [batch, q_heads, head_dim] (f32) as kv_decode_attention's second stage
    does (docs/decode-attention.md, KIVI).

    ```mlir
    lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr
        at %lengths into %out, %partials
        {scheme = "kv_kivi_int4", group_size = 32, residual_window = 128,
         per_channel_keys, softmax_scale = 0.125 : f32, split_tokens = 64}
        : memref<2x8x64xbf16>, memref<2x2x4096x32xi8>,
          memref<2x2x128x64xf32>, memref<2x2x128x64xf32>,
          memref<2x2x160x64xf16>, memref<2x2x4096x32xi8>,
          memref<2x2x4096x2xf32>, memref<2x2x4096x2xf32>,
          memref<2x2x160x64xf16>, memref<2xi32>, memref<2x8x64xf32>,
          memref<2x2x64x4x66xf32>
    ```
  }];
  let arguments = (ins Arg<Lowbit_KiviQuery, "", [MemRead]>:$query,
      Arg<Lowbit_KiviBytes, "", [MemRead]>:$key_codes,
      Arg<Lowbit_KiviScales, "", [MemRead]>:$key_scales,
      Arg<Lowbit_KiviScales, "", [MemRead]>:$key_zeros,
      Arg<Lowbit_KiviTokens, "", [MemRead]>:$key_residual,
      Arg<Lowbit_KiviBytes, "", [MemRead]>:$value_codes,
      Arg<Lowbit_KiviScales, "", [MemRead]>:$value_scales,
      Arg<Lowbit_KiviScales, "", [MemRead]>:$value_zeros,
      Arg<Lowbit_KiviTokens, "", [MemRead]>:$value_residual,
      Arg<Lowbit_KiviLengths, "", [MemRead]>:$lengths,
      Arg<Lowbit_KiviAttentionOutput, "", [MemWrite]>:$output,
      Arg<Lowbit_KiviPartials, "", [MemRead, MemWrite]>:$partials,
      Arg<Optional<Lowbit_KiviBlockTable>, "", [MemRead]>:$block_table,
      StrAttr:$scheme, I64Attr:$group_size, I64Attr:$residual_window,
      UnitAttr:$per_channel_keys, UnitAttr:$integer_zero,
      F32Attr:$softmax_scale,
      I64Attr:$split_tokens);
  let assemblyFormat = [{
    $query `,` $key_codes `,` $key_scales `,` $key_zeros `,` $key_residual
    `,` $value_codes `,` $value_scales `,` $value_zeros `,` $value_residual
    `at` $lengths `into` $output `,` $partials (`table` $block_table^)?
    attr-dict `:` type($query) `,` type($key_codes) `,` type($key_scales)
    `,` type($key_zeros) `,` type($key_residual) `,` type($value_codes) `,`
    type($value_scales) `,` type($value_zeros) `,` type($value_residual) `,`
    type($lengths) `,` type($output) `,` type($partials)
    (`,` type($block_table)^)?
  }];
  let extraClassDeclaration = [{
    /// The keys' side (per channel with per_channel_keys) and the values'
    /// (per token); the verifier has checked them.
    ::lowbit::kv::KiviSide getKeySide();
    ::lowbit::kv::KiviSide getValueSide();
    bool isPaged() { return getBlockTable() != nullptr; }
  }];
  let hasVerifier = 1;
}

#endif // LOWBIT_KIVI_OPS_TD
