// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// lowbit.kv_decode_attention's refusals, one case each.

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x3x300x64xi8>, %ks: tensor<2x3x300x2xf32>, %vc: tensor<2x3x300x64xi8>, %vs: tensor<2x3x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{query heads (8) must be a multiple of kv heads (3)}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x3x300x64xi8>, tensor<2x3x300x2xf32>, tensor<2x3x300x64xi8>, tensor<2x3x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x3x3x2x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<1xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<1xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{takes int8 groups (kv_int8_g<G>) or FP8 e4m3/e5m2 codes (kv_fp8_*), not e2m1}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.float<"e2m1">, scale = "per_tensor", softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<1xf32>, tensor<2x2x300x64xi8>, tensor<1xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{with int8 codes takes scale = "per_group", not "per_head"}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_head", softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{with FP8 codes takes scale = "per_tensor" or "per_head", not "per_group"}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.float<"e4m3">, scale = "per_group", softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x299x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{key and value codes differ in shape}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x299x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x32xi8>, %ks: tensor<2x2x300x1xf32>, %vc: tensor<2x2x300x32xi8>, %vs: tensor<2x2x300x1xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{the cache's head_dim (32) differs from the query's (64)}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x32xi8>, tensor<2x2x300x1xf32>, tensor<2x2x300x32xi8>, tensor<2x2x300x1xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<3x2x300x64xi8>, %ks: tensor<3x2x300x2xf32>, %vc: tensor<3x2x300x64xi8>, %vs: tensor<3x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{the cache holds 3 sequences for a batch of 2}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<3x2x300x64xi8>, tensor<3x2x300x2xf32>, tensor<3x2x300x64xi8>, tensor<3x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<3xi32>) {
  // expected-error @+1 {{got 3 sequence lengths for a batch of 2}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<3xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x3xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{key scales 'tensor<2x2x300x3xf32>' must be the codes' shape with the last axis ceil(head_dim / group_size) = 2}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x3xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<1xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{value scales 'tensor<1xf32>' must be [2] for per_head FP8 scales}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.float<"e5m2">, scale = "per_head", softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2xf32>, tensor<2x2x300x64xi8>, tensor<1xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{group_size must be >= 1, got 0}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 0, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{convention must be "multiplier" or "divisor", not "reciprocal"}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, convention = "reciprocal", softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{split_tokens must be >= 1, got 0}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 0}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{softmax_scale must be a positive normal number (finite, at least 2^-126), got inf}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0x7F800000 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{softmax_scale must be a positive normal number (finite, at least 2^-126), got -0}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0x80000000 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{softmax_scale must be a positive normal number (finite, at least 2^-126), got 1.40129846e-45}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0x00000001 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{softmax_scale must be a positive normal number (finite, at least 2^-126), got -0.125}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0xBE000000 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{output 'tensor<2x8x32xf32>' must be [batch, q_heads, head_dim] = [2, 8, 64]}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x32xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{partials 'tensor<2x2x2x4x66xf32>' must be [batch, kv_heads, ceil(max_tokens / split_tokens), q_heads / kv_heads, head_dim + 2] = [2, 2, 3, 4, 66]}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x2x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<9x2x32x64xi8>, %ks: tensor<9x2x32x2xf32>, %vc: tensor<9x2x32x64xi8>, %vs: tensor<9x2x32x2xf32>, %lens: tensor<2xi32>, %table: tensor<2x19xi32>) {
  // expected-error @+1 {{a paged cache holds pages of 16 tokens ([pages, kv_heads, 16, head_dim]), got 32 tokens per page}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens block_table(%table : tensor<2x19xi32>) {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<9x2x32x64xi8>, tensor<9x2x32x2xf32>, tensor<9x2x32x64xi8>, tensor<9x2x32x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x5x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<9x2x16x64xi8>, %ks: tensor<9x2x16x2xf32>, %vc: tensor<9x2x16x64xi8>, %vs: tensor<9x2x16x2xf32>, %lens: tensor<2xi32>, %table: tensor<3x19xi32>) {
  // expected-error @+1 {{the block table has 3 rows for a batch of 2}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens block_table(%table : tensor<3x19xi32>) {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<9x2x16x64xi8>, tensor<9x2x16x2xf32>, tensor<9x2x16x64xi8>, tensor<9x2x16x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<9x2x16x64xi8>, %ks: tensor<9x2x16x2xf32>, %vc: tensor<9x2x16x64xi8>, %vs: tensor<9x2x16x2xf32>, %lens: tensor<2xi32>, %table: tensor<2x8xi32>) {
  // expected-error @+1 {{partials 'tensor<2x2x3x4x66xf32>' must be [batch, kv_heads, ceil(max_tokens / split_tokens), q_heads / kv_heads, head_dim + 2] = [2, 2, 1, 4, 66]}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens block_table(%table : tensor<2x8xi32>) {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128}
      : tensor<2x8x64xf32>, tensor<9x2x16x64xi8>, tensor<9x2x16x2xf32>, tensor<9x2x16x64xi8>, tensor<9x2x16x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xbf16>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{dot must be "fma" or "mma", not "wmma"}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.float<"e4m3">, scale = "per_head", softmax_scale = 0.125 : f32, split_tokens = 128, dot = "wmma"}
      : tensor<2x8x64xbf16>, tensor<2x2x300x64xi8>, tensor<2xf32>, tensor<2x2x300x64xi8>, tensor<2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf32>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{dot = "mma" takes an f16 or bf16 query, not 'f32'}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.float<"e4m3">, scale = "per_head", softmax_scale = 0.125 : f32, split_tokens = 128, dot = "mma"}
      : tensor<2x8x64xf32>, tensor<2x2x300x64xi8>, tensor<2xf32>, tensor<2x2x300x64xi8>, tensor<2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x64xf16>, %kc: tensor<2x2x300x64xi8>, %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>, %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{dot = "mma" takes FP8 codes (exact in f16)}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 128, dot = "mma"}
      : tensor<2x8x64xf16>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x72xf16>, %kc: tensor<2x2x300x72xi8>, %ks: tensor<2xf32>, %vc: tensor<2x2x300x72xi8>, %vs: tensor<2xf32>, %lens: tensor<2xi32>) {
  // expected-error @+1 {{dot = "mma" needs a static head_dim that is a multiple of 16, not 72}}
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens {format = #lowbit.float<"e5m2">, scale = "per_head", softmax_scale = 0.125 : f32, split_tokens = 128, dot = "mma"}
      : tensor<2x8x72xf16>, tensor<2x2x300x72xi8>, tensor<2xf32>, tensor<2x2x300x72xi8>, tensor<2xf32>, tensor<2xi32>
      -> tensor<2x8x72xf32>, tensor<2x2x3x4x74xf32>
  return
}
