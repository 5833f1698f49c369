//===- LowbitKvOps.td - KV-cache append and dequantize -----*- tablegen -*-===//
//
// Ops on a quantized KV cache held in memrefs (the cache is state that an
// append updates in place, so these ops work on buffers, not tensors). The
// layouts are kv/KvPaged.h's and docs/kv-cache.md's; the schemes and their
// arithmetic are kv/KvQuantize.h's, named as kv/KvKernelSpec.h parses them
// (docs/kv-kernels.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_OPS_TD
#define LOWBIT_KV_OPS_TD

include "dialect/LowbitDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lowbit_KvValues : MemRefRankOf<[F16, BF16], [4]>;
def Lowbit_KvOutput : MemRefRankOf<[F16, BF16, F32], [4]>;
def Lowbit_KvCodes : MemRefRankOf<[I8], [4]>;
def Lowbit_KvScales : MemRefRankOf<[F32], [1, 4]>;
def Lowbit_KvPositions : MemRefRankOf<[I32], [1]>;
def Lowbit_KvBlockTable : MemRefRankOf<[I32], [2]>;

// The scheme: kv_int8_g<G> (with `convention`, optional `epsilon`, default
// 1e-8) or kv_fp8_e4m3 / kv_fp8_e5m2 (with `per_head` when the static
// scales are one per kv head).
defvar KvSchemeAttrs = (ins StrAttr:$scheme,
                        OptionalAttr<StrAttr>:$convention,
                        OptionalAttr<F32Attr>:$epsilon, UnitAttr:$per_head);

class Lowbit_KvOp<string mnemonic> : Lowbit_Op<mnemonic> {
  let extraClassDeclaration = [{
    /// The scheme and its parameters (the verifier has checked them).
    ::lowbit::kv::KvSchemeParams getSchemeParams();
    bool isPaged() { return getBlockTable() != nullptr; }
  }];
  let hasVerifier = 1;
}

def Lowbit_KvAppendOp : Lowbit_KvOp<"kv_append"> {
  let summary = "Quantizes new tokens into a KV cache at each sequence's end";
  let description = [{
    Writes `new` ([batch, kv_heads, new_tokens, head_dim] of f16 or bf16,
    K or V) into the quantized cache: token t of sequence b goes to
    position `positions[b] + t`, quantized with `scheme` as
    kv/KvQuantize.h does, bit for bit.

    The cache is contiguous, `codes` [batch, kv_heads, max_tokens,
    head_dim] i8, or paged when `table` gives a block table [batch,
    max_blocks] of i32 pages: `codes` [pages, kv_heads, 16, head_dim],
    token p of sequence b in page `table[b, p / 16]`, slot `p % 16`
    (kv/KvPaged.h).

    Scales: for kv_int8_g<G>, f32 with the codes' layout and width
    ceil(head_dim / G), one per (token, group), written by the append; for
    kv_fp8, the static scales, read: [1] (per tensor) or [kv_heads]
    (`per_head`). FP8 codes are the format's bytes in i8.

    Tokens whose position is past the cache (contiguous), or whose block
    table entry names no page, are not written: the kernel never writes
    out of bounds, and callers check lengths first (kv/KvCache.h does).

    ```mlir
    lowbit.kv_append %k into %codes, %scales at %positions
        {scheme = "kv_int8_g64", convention = "multiplier"}
        : memref<2x8x1x128xf16>, memref<2x8x4096x128xi8>,
          memref<2x8x4096x2xf32>, memref<2xi32>
    ```
  }];
  let arguments = !con((ins Arg<Lowbit_KvValues, "", [MemRead]>:$input,
      Arg<Lowbit_KvCodes, "", [MemWrite]>:$codes,
      Arg<Lowbit_KvScales, "", [MemRead, MemWrite]>:$scales,
      Arg<Lowbit_KvPositions, "", [MemRead]>:$positions,
      Arg<Optional<Lowbit_KvBlockTable>, "", [MemRead]>:$block_table),
      KvSchemeAttrs);
  let assemblyFormat = [{
    $input `into` $codes `,` $scales `at` $positions
    (`table` $block_table^)? attr-dict `:` type($input) `,` type($codes) `,`
    type($scales) `,` type($positions) (`,` type($block_table)^)?
  }];
}

def Lowbit_KvDequantizeOp : Lowbit_KvOp<"kv_dequantize"> {
  let summary = "Reads a token range of a quantized KV cache back to floats";
  let description = [{
    Writes `output` [batch, kv_heads, tokens, head_dim] (f16, bf16 or f32):
    token t of sequence b is the cache's token `positions[b] + t`,
    dequantized as kv/KvQuantize.h does (then rounded to nearest even for
    f16 and bf16). Same cache operands and layouts as lowbit.kv_append.
    Tokens past the cache, or in a page the table does not name, are
    written as 0.

    ```mlir
    lowbit.kv_dequantize %codes, %scales at %start into %out
        {scheme = "kv_fp8_e4m3", per_head}
        : memref<2x8x4096x128xi8>, memref<8xf32>, memref<2xi32>,
          memref<2x8x64x128xf32>
    ```
  }];
  let arguments = !con((ins Arg<Lowbit_KvCodes, "", [MemRead]>:$codes,
      Arg<Lowbit_KvScales, "", [MemRead]>:$scales,
      Arg<Lowbit_KvPositions, "", [MemRead]>:$positions,
      Arg<Lowbit_KvOutput, "", [MemWrite]>:$output,
      Arg<Optional<Lowbit_KvBlockTable>, "", [MemRead]>:$block_table),
      KvSchemeAttrs);
  let assemblyFormat = [{
    $codes `,` $scales `at` $positions `into` $output
    (`table` $block_table^)? attr-dict `:` type($codes) `,` type($scales) `,`
    type($positions) `,` type($output) (`,` type($block_table)^)?
  }];
}

#endif // LOWBIT_KV_OPS_TD
