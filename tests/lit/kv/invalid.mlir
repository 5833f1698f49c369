// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// Every refusal of the KV-cache ops' verifiers, one case each.

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{'kv_int4_g8' is not a KV scheme (kv_int8_g<G>, kv_fp8_e4m3, kv_fp8_e5m2)}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int4_g8", convention = "multiplier"}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{'kv_int8_g0': the group size after kv_int8_g must be an integer in [1, 2^30]}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g0", convention = "multiplier"}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{needs convention = "multiplier" or "divisor" for kv_int8_g8 (the two give different bits)}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8"}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{convention 'reciprocal' is neither multiplier nor divisor}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "reciprocal"}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{epsilon must be finite and > 0}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor", epsilon = 0.0 : f32}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{per_head belongs to kv_fp8 schemes; kv_int8_g8 computes a scale per group}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor", per_head}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{convention and epsilon belong to kv_int8 schemes; kv_fp8_e4m3 has static scales}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_fp8_e4m3", convention = "divisor"}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x2x1x8xf16>, %c: memref<1x3x4x8xi8>,
             %s: memref<1x3x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{the codes' kv_heads (dimension 1) is 3; the tokens have 2}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor"}
      : memref<1x2x1x8xf16>, memref<1x3x4x8xi8>, memref<1x3x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<2x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<2xi32>) {
  // expected-error @+1 {{the codes' batch (dimension 0) is 1; the tokens have 2}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor"}
      : memref<2x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<2xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x16xi8>,
             %s: memref<1x1x4x2xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{the codes' head_dim (dimension 3) is 16; the tokens have 8}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor"}
      : memref<1x1x1x8xf16>, memref<1x1x4x16xi8>, memref<1x1x4x2xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x5x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{5 tokens per sequence do not fit in a cache of 4 tokens}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor"}
      : memref<1x1x5x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<2x1x1x8xf16>, %c: memref<2x1x4x8xi8>,
             %s: memref<2x1x4x1xf32>, %p: memref<3xi32>) {
  // expected-error @+1 {{positions has 3 entries for a batch of 2}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor"}
      : memref<2x1x1x8xf16>, memref<2x1x4x8xi8>, memref<2x1x4x1xf32>, memref<3xi32>
  return
}

// -----

// ceil(10 / 4) = 3 groups, a ragged last one: 2 scales are too few.
func.func @f(%k: memref<1x1x1x10xf16>, %c: memref<1x1x4x10xi8>,
             %s: memref<1x1x4x2xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{the scales' last dimension is 2; head_dim 10 in groups of 4 needs ceil(10 / 4) = 3}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g4", convention = "divisor"}
      : memref<1x1x1x10xf16>, memref<1x1x4x10xi8>, memref<1x1x4x2xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x3x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{the scales' dimension 2 is 3; the codes' is 4}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor"}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x3x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{kv_int8_g8 stores per-group scales with the codes' layout (rank 4); got rank 1}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_int8_g8", convention = "divisor"}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x4x8xi8>,
             %s: memref<1x1x4x1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{kv_fp8_e5m2 takes its static scales as a rank-1 buffer; got rank 4}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_fp8_e5m2"}
      : memref<1x1x1x8xf16>, memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x4x1x8xf16>, %c: memref<1x4x4x8xi8>,
             %s: memref<4xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{a per-tensor scale is one f32; got 4}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_fp8_e4m3"}
      : memref<1x4x1x8xf16>, memref<1x4x4x8xi8>, memref<4xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x4x1x8xf16>, %c: memref<1x4x4x8xi8>,
             %s: memref<2xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{per_head needs one scale per kv head (4); got 2}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_fp8_e4m3", per_head}
      : memref<1x4x1x8xf16>, memref<1x4x4x8xi8>, memref<2xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<3x1x8x8xi8>,
             %s: memref<1xf32>, %p: memref<1xi32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{paged codes are [pages, kv_heads, 16, head_dim]; dimension 2 is 8}}
  lowbit.kv_append %k into %c, %s at %p table %t {scheme = "kv_fp8_e4m3"}
      : memref<1x1x1x8xf16>, memref<3x1x8x8xi8>, memref<1xf32>, memref<1xi32>, memref<1x2xi32>
  return
}

// -----

func.func @f(%k: memref<2x1x1x8xf16>, %c: memref<3x1x16x8xi8>,
             %s: memref<1xf32>, %p: memref<2xi32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{the block table has 1 rows for a batch of 2}}
  lowbit.kv_append %k into %c, %s at %p table %t {scheme = "kv_fp8_e4m3"}
      : memref<2x1x1x8xf16>, memref<3x1x16x8xi8>, memref<1xf32>, memref<2xi32>, memref<1x2xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x33x8xf16>, %c: memref<3x1x16x8xi8>,
             %s: memref<1xf32>, %p: memref<1xi32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{33 tokens per sequence do not fit in 2 blocks of 16}}
  lowbit.kv_append %k into %c, %s at %p table %t {scheme = "kv_fp8_e4m3"}
      : memref<1x1x33x8xf16>, memref<3x1x16x8xi8>, memref<1xf32>, memref<1xi32>, memref<1x2xi32>
  return
}

// -----

// Appended tokens are f16 or bf16 (the type constraint).
func.func @f(%k: memref<1x1x1x8xf32>, %c: memref<1x1x4x8xi8>,
             %s: memref<1xf32>, %p: memref<1xi32>) {
  // expected-error @+1 {{operand #0 must be 4D memref of 16-bit float or bfloat16 type values}}
  lowbit.kv_append %k into %c, %s at %p {scheme = "kv_fp8_e4m3"}
      : memref<1x1x1x8xf32>, memref<1x1x4x8xi8>, memref<1xf32>, memref<1xi32>
  return
}

// -----

func.func @f(%c: memref<1x1x4x8xi8>, %s: memref<1x1x4x1xf32>,
             %p: memref<1xi32>, %out: memref<1x1x2x6xf32>) {
  // expected-error @+1 {{the codes' head_dim (dimension 3) is 8; the tokens have 6}}
  lowbit.kv_dequantize %c, %s at %p into %out {scheme = "kv_int8_g8", convention = "divisor"}
      : memref<1x1x4x8xi8>, memref<1x1x4x1xf32>, memref<1xi32>, memref<1x1x2x6xf32>
  return
}
