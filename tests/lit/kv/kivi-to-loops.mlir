// RUN: lowbit-opt %s --lowbit-kivi-to-loops --canonicalize | FileCheck %s

// The structure lowbit-kivi-to-loops emits; the bits are checked by
// tests/kvkernels against kv/KvKivi.h.

// Keys per channel, int4, G = 4, R = 2, 3 new tokens: the flush is one nest
// over B * H * ceil(3 / 4) groups * 4 code bytes = 8; each iteration takes
// min/max statistics of its two channels over the group's 4 tokens (read
// from the ring or the input), stores their scales and zeros in the
// group's row, and writes 4 bytes of two nibbles. Then the ring write,
// over B * H * 3 tokens, into slot p mod 6.
// CHECK-LABEL: func @append_keys
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c8) step (%c1)
// CHECK: scf.for {{.*}} = %c0 to %c4 step %c1 iter_args({{.*}}) -> (f32, f32, f32)
// CHECK: scf.if {{.*}} -> (f16)
// CHECK: memref.store {{.*}} : memref<2x1x16x8xf32>
// CHECK: memref.store {{.*}} : memref<2x1x16x8xi8>
// CHECK: scf.for {{.*}} = %c0 to %c4 step %c1 iter_args({{.*}}) -> (f32, f32, f32)
// CHECK: arith.shli {{.*}}, %c4_i8 : i8
// CHECK: arith.ori
// CHECK: memref.store {{.*}} : memref<2x1x64x4xi8>
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c6) step (%c1)
// CHECK: arith.remsi {{.*}}, %c6
// CHECK: memref.store {{.*}} : memref<2x1x6x8xf16>
// CHECK-NOT: lowbit.kivi_append
func.func @append_keys(%k: memref<2x1x3x8xf16>, %c: memref<2x1x64x4xi8>,
    %s: memref<2x1x16x8xf32>, %z: memref<2x1x16x8xi8>,
    %r: memref<2x1x6x8xf16>, %l: memref<2xi32>) {
  lowbit.kivi_append %k into %c, %s, %z, %r at %l
      {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2,
       per_channel}
      : memref<2x1x3x8xf16>, memref<2x1x64x4xi8>, memref<2x1x16x8xf32>,
        memref<2x1x16x8xi8>, memref<2x1x6x8xf16>, memref<2xi32>
  return
}

// Values per token, int2: the flush is one nest over B * H * (ceil(5 / 4)
// * 4) = 16 token rows; each row's groups (8 channels in groups of 4),
// then its bytes, one code per byte.
// CHECK-LABEL: func @append_values
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c16) step (%c1)
// CHECK: scf.for {{.*}} = %c0 to %c2 step %c1
// CHECK: memref.store {{.*}} : memref<2x1x64x2xf32>
// CHECK: scf.for {{.*}} = %c0 to %c8 step %c1
// CHECK-NOT: arith.shli
// CHECK: memref.store {{.*}} : memref<2x1x64x8xi8>
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c10) step (%c1)
func.func @append_values(%v: memref<2x1x5x8xbf16>, %c: memref<2x1x64x8xi8>,
    %s: memref<2x1x64x2xf32>, %z: memref<2x1x64x2xi8>,
    %r: memref<2x1x6x8xbf16>, %l: memref<2xi32>) {
  lowbit.kivi_append %v into %c, %s, %z, %r at %l
      {scheme = "kv_kivi_int2", group_size = 4, residual_window = 2}
      : memref<2x1x5x8xbf16>, memref<2x1x64x8xi8>, memref<2x1x64x2xf32>,
        memref<2x1x64x2xi8>, memref<2x1x6x8xbf16>, memref<2xi32>
  return
}

// Dequantize: one nest over B * H * N rows; a row in [0, length) past the
// quantized prefix widens the ring's token, an older one decodes its
// nibble ((q - zero) * scale); others are 0.
// CHECK-LABEL: func @dequantize_keys_paged
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c6) step (%c1)
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.shrui
// CHECK: arith.subi
// CHECK: arith.mulf
// CHECK-NOT: lowbit.kivi_dequantize
func.func @dequantize_keys_paged(%c: memref<?x1x16x4xi8>,
    %s: memref<?x1x4x8xf32>, %z: memref<?x1x4x8xi8>,
    %r: memref<2x1x6x8xf16>, %p: memref<2xi32>, %l: memref<2xi32>,
    %o: memref<2x1x3x8xf32>, %t: memref<2x?xi32>) {
  lowbit.kivi_dequantize %c, %s, %z, %r at %p, %l into %o table %t
      {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2,
       per_channel}
      : memref<?x1x16x4xi8>, memref<?x1x4x8xf32>, memref<?x1x4x8xi8>,
        memref<2x1x6x8xf16>, memref<2xi32>, memref<2xi32>,
        memref<2x1x3x8xf32>, memref<2x?xi32>
  return
}
