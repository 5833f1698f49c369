// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// Every refusal of lowbit.kivi_decode_attention's verifier, one case each,
// after a valid base case: one sequence, two query heads on one kv head,
// head_dim 8, int4 keys per channel in groups of 4 tokens, R = 2, 16
// tokens (or 3 pages of 16 and 2 blocks), split 8. (Generated cases; each
// changes one thing.)

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{unknown KIVI scheme 'kv_kivi_int3' (kv_kivi_int4, kv_kivi_int2)}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int3", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{KIVI group size 0 is not in [1, 4096]}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 0, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x133x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x133x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{KIVI residual window 129 is not in [0, 128]}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 129, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x133x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x133x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{softmax_scale must be a positive normal number (finite, at least 2^-126), got inf}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 0x7F800000 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{softmax_scale must be a positive normal number (finite, at least 2^-126), got -0}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 0x80000000 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{softmax_scale must be a positive normal number (finite, at least 2^-126), got 1.40129846e-45}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 0x00000001 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{softmax_scale must be a positive normal number (finite, at least 2^-126), got -0.125}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 0xBE000000 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{split_tokens is 0; it must be >= 1}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 0}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xbf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{the value residual holds the key residual's element type}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xbf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x15x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{key and value codes have different shapes}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x15x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x3x8xf32>, %kc: memref<1x2x16x4xi8>, %ks: memref<1x2x4x8xf32>, %kz: memref<1x2x4x8xf32>, %kr: memref<1x2x6x8xf16>, %vc: memref<1x2x16x4xi8>, %vs: memref<1x2x16x2xf32>, %vz: memref<1x2x16x2xf32>, %vr: memref<1x2x6x8xf16>, %l: memref<1xi32>, %o: memref<1x3x8xf32>, %p: memref<1x2x2x1x10xf32>) {
  // expected-error @+1 {{query heads (3) are not a multiple of kv_heads (2)}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x3x8xf32>, memref<1x2x16x4xi8>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x6x8xf16>, memref<1x2x16x4xi8>, memref<1x2x16x2xf32>, memref<1x2x16x2xf32>, memref<1x2x6x8xf16>, memref<1xi32>, memref<1x3x8xf32>, memref<1x2x2x1x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x8xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x8xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{key codes dimension 3 is 8; head_dim nibble-packed (ceil(D / 2)) needs 4}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x8xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x8xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{key codes dimension 3 is 4; head_dim at one 2-bit code per byte needs 8}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int2", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x2x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x2x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{key codes dimension 1 is 2; kv_heads needs 1}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x2x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x2x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<2x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<2x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{key codes dimension 0 is 2; the batch needs 1}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<2x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<2x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x5x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x5x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{key residual dimension 2 is 5; the ring of R + G tokens needs 6}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x5x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x5x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x9xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{value residual dimension 3 is 9; head_dim needs 8}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x9xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<2x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{key residual dimension 0 is 2; the batch needs 1}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<2x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<2xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{lengths dimension 0 is 2; the batch needs 1}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<2xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x4xf32>, %kz: memref<1x1x4x4xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{key scales dimension 3 is 4; per_channel (one per channel) needs 8}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x4xf32>, memref<1x1x4x4xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x8xf32>, %vz: memref<1x1x16x8xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{value scales dimension 3 is 8; groups of 4 channels (ceil(D / G)) needs 2}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x8xf32>, memref<1x1x16x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x8x2xf32>, %vz: memref<1x1x8x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{value scales dimension 2 is 8; the codes' layout needs 16}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x8x2xf32>, memref<1x1x8x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x3x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{the key zeros' shape must be the key scales'}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x3x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x3xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{the value zeros' shape must be the value scales'}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x3xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<3x1x16x4xi8>, %ks: memref<3x1x3x8xf32>, %kz: memref<3x1x3x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<3x1x16x4xi8>, %vs: memref<3x1x16x2xf32>, %vz: memref<3x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x4x2x10xf32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{key scales dimension 2 is 3; one row per group starting in a page (ceil(16 / G)) needs 4}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<3x1x16x4xi8>, memref<3x1x3x8xf32>, memref<3x1x3x8xf32>, memref<1x1x6x8xf16>, memref<3x1x16x4xi8>, memref<3x1x16x2xf32>, memref<3x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x4x2x10xf32>, memref<1x2xi32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<3x1x8x4xi8>, %ks: memref<3x1x4x8xf32>, %kz: memref<3x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<3x1x8x4xi8>, %vs: memref<3x1x8x2xf32>, %vz: memref<3x1x8x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x4x2x10xf32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{key codes dimension 2 is 8; a page of 16 tokens needs 16}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<3x1x8x4xi8>, memref<3x1x4x8xf32>, memref<3x1x4x8xf32>, memref<1x1x6x8xf16>, memref<3x1x8x4xi8>, memref<3x1x8x2xf32>, memref<3x1x8x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x4x2x10xf32>, memref<1x2xi32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<3x1x16x4xi8>, %ks: memref<3x1x4x8xf32>, %kz: memref<3x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<3x1x16x4xi8>, %vs: memref<3x1x16x2xf32>, %vz: memref<3x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x4x2x10xf32>, %t: memref<2x2xi32>) {
  // expected-error @+1 {{block table dimension 0 is 2; the batch needs 1}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<3x1x16x4xi8>, memref<3x1x4x8xf32>, memref<3x1x4x8xf32>, memref<1x1x6x8xf16>, memref<3x1x16x4xi8>, memref<3x1x16x2xf32>, memref<3x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x4x2x10xf32>, memref<2x2xi32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x3x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{output dimension 1 is 3; the query heads needs 2}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x3x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x9xf32>, %p: memref<1x1x2x2x10xf32>) {
  // expected-error @+1 {{output dimension 2 is 9; head_dim needs 8}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x9xf32>, memref<1x1x2x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x3x2x10xf32>) {
  // expected-error @+1 {{partials dimension 2 is 3; ceil(max tokens / split_tokens) needs 2}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x3x2x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<3x1x16x4xi8>, %ks: memref<3x1x4x8xf32>, %kz: memref<3x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<3x1x16x4xi8>, %vs: memref<3x1x16x2xf32>, %vz: memref<3x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{partials dimension 2 is 2; ceil(max tokens / split_tokens) needs 4}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<3x1x16x4xi8>, memref<3x1x4x8xf32>, memref<3x1x4x8xf32>, memref<1x1x6x8xf16>, memref<3x1x16x4xi8>, memref<3x1x16x2xf32>, memref<3x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>, memref<1x2xi32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x1x10xf32>) {
  // expected-error @+1 {{partials dimension 3 is 1; query heads per kv head needs 2}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x1x10xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x8xf32>) {
  // expected-error @+1 {{partials dimension 4 is 8; head_dim + 2 needs 10}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x8xf32>
  return
}

// -----

func.func @f(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x2x2x2x10xf32>) {
  // expected-error @+1 {{partials dimension 1 is 2; kv_heads needs 1}}
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x2x2x2x10xf32>
  return
}
