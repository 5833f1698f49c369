// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// Every refusal of the KIVI ops' verifiers, one case each (append unless
// the check is dequantize's own).

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{unknown KIVI scheme 'kv_kivi_int3' (kv_kivi_int4, kv_kivi_int2)}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int3", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{KIVI group size 0 is not in [1, 4096]}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 0, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{KIVI group size 4097 is not in [1, 4096]}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4097, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{KIVI residual window 129 is not in [0, 128]}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 129, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{KIVI residual window -1 is not in [0, 128]}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = -1, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xbf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{the residual holds the input's element type}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xbf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x2x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{codes dimension 1 is 2; kv_heads needs 1}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x2x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x8xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{codes dimension 3 is 8; head_dim nibble-packed (ceil(D / 2)) needs 4}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x8xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{codes dimension 3 is 4; head_dim at one 2-bit code per byte needs 8}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int2", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<2x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{residual dimension 0 is 2; the batch needs 1}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<2x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x3x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{residual dimension 1 is 3; kv_heads needs 1}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x3x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x5x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{residual dimension 2 is 5; the ring of R + G tokens needs 6}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x5x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x9xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{residual dimension 3 is 9; head_dim needs 8}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x9xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<2xi32>) {
  // expected-error @+1 {{lengths dimension 0 is 2; the batch needs 1}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<2xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x2x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{scales dimension 1 is 2; kv_heads needs 1}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x2x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x2xf32>, %z: memref<1x1x4x2xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{scales dimension 3 is 2; per_channel (one per channel) needs 8}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x2xf32>, memref<1x1x4x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x16x8xf32>, %z: memref<1x1x16x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{scales dimension 3 is 8; groups of 4 channels (ceil(D / G)) needs 2}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x8xf32>, memref<1x1x16x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<3x1x16x4xi8>, %s: memref<3x1x4x8xf32>, %z: memref<3x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{codes dimension 0 is 3; the batch needs 1}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<3x1x16x4xi8>, memref<3x1x4x8xf32>, memref<3x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<5x1x8x4xi8>, %s: memref<5x1x4x8xf32>, %z: memref<5x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{codes dimension 2 is 8; a page of 16 tokens needs 16}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<5x1x8x4xi8>, memref<5x1x4x8xf32>, memref<5x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<5x1x16x4xi8>, %s: memref<5x1x4x8xf32>, %z: memref<5x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>, %t: memref<2x2xi32>) {
  // expected-error @+1 {{block table dimension 0 is 2; the batch needs 1}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<5x1x16x4xi8>, memref<5x1x4x8xf32>, memref<5x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<2x2xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<5x1x16x4xi8>, %s: memref<4x1x4x8xf32>, %z: memref<4x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{scales dimension 0 is 4; the codes' dimension 0 needs 5}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<5x1x16x4xi8>, memref<4x1x4x8xf32>, memref<4x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<5x1x16x4xi8>, %s: memref<5x1x1x8xf32>, %z: memref<5x1x1x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>, %t: memref<1x2xi32>) {
  // expected-error @+1 {{scales dimension 2 is 1; one row per group starting in a page (ceil(16 / G)) needs 4}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<5x1x16x4xi8>, memref<5x1x1x8xf32>, memref<5x1x1x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x2xf32>, %z: memref<1x1x4x2xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{scales dimension 2 is 4; the codes' layout needs 16}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x2xf32>, memref<1x1x4x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x5x8xf32>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{the zeros' shape must be the scales'}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x5x8xf32>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}

// -----

func.func @f(%c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xf32>, %r: memref<1x1x6x8xf16>, %p: memref<2xi32>, %l: memref<1xi32>, %o: memref<1x1x3x8xf32>) {
  // expected-error @+1 {{the positions' dimension 0 is 2; the batch needs 1}}
  lowbit.kivi_dequantize %c, %s, %z, %r at %p, %l into %o {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel}
      : memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<2xi32>, memref<1xi32>, memref<1x1x3x8xf32>
  return
}

// -----

// Zeros are f32 (KIVI's float mn, or integer_zero's zero point as f32).
func.func @f(%k: memref<1x1x1x8xf16>, %c: memref<1x1x16x4xi8>, %s: memref<1x1x4x8xf32>, %z: memref<1x1x4x8xi8>, %r: memref<1x1x6x8xf16>, %l: memref<1xi32>) {
  // expected-error @+1 {{operand #3 must be 4D memref of 32-bit float values}}
  lowbit.kivi_append %k into %c, %s, %z, %r at %l {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel, integer_zero}
      : memref<1x1x1x8xf16>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xi8>, memref<1x1x6x8xf16>, memref<1xi32>
  return
}
