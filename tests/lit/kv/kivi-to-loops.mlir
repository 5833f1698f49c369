// RUN: lowbit-opt %s --lowbit-kivi-to-loops --canonicalize | FileCheck %s

// The structure lowbit-kivi-to-loops emits; the bits are checked by
// tests/kvkernels against kv/KvKivi.h.

// Keys per channel, int4, G = 4, R = 2, 3 new tokens: the flush is one nest
// over B * H * ceil(3 / 4) groups * 4 code bytes = 8; each iteration takes
// min/max statistics of its two channels over the group's 4 tokens (read
// from the ring or the input; KIVI's raw min and max start at +-inf),
// stores their scales and zeros (mn) in the group's row, and writes 4
// bytes of two nibbles, each rne(clamp((x - mn) / s, 0, 15)). Then the ring write,
// over B * H * 3 tokens, into slot p mod 6.
// CHECK-LABEL: func @append_keys
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c8) step (%c1)
// CHECK: scf.for {{.*}} = %c0 to %c4 step %c1 iter_args({{.*}} = %[[INF]], {{.*}} = %[[NINF]]) -> (f32, f32, f32)
// CHECK: scf.if {{.*}} -> (f16)
// CHECK: memref.store {{.*}} : memref<2x1x16x8xf32>
// CHECK: memref.store {{.*}} : memref<2x1x16x8xf32>
// CHECK: scf.for {{.*}} = %c0 to %c4 step %c1 iter_args({{.*}}) -> (f32, f32, f32)
// CHECK: arith.subf
// CHECK: arith.divf
// CHECK: math.roundeven
// CHECK: arith.shli {{.*}}, %c4_i8 : i8
// CHECK: arith.ori
// CHECK: memref.store {{.*}} : memref<2x1x64x4xi8>
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c6) step (%c1)
// CHECK: arith.remsi {{.*}}, %c6
// CHECK: memref.store {{.*}} : memref<2x1x6x8xf16>
// CHECK-NOT: lowbit.kivi_append
func.func @append_keys(%k: memref<2x1x3x8xf16>, %c: memref<2x1x64x4xi8>,
    %s: memref<2x1x16x8xf32>, %z: memref<2x1x16x8xf32>,
    %r: memref<2x1x6x8xf16>, %l: memref<2xi32>) {
  lowbit.kivi_append %k into %c, %s, %z, %r at %l
      {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2,
       per_channel}
      : memref<2x1x3x8xf16>, memref<2x1x64x4xi8>, memref<2x1x16x8xf32>,
        memref<2x1x16x8xf32>, memref<2x1x6x8xf16>, memref<2xi32>
  return
}

// Values per token, int2, integer_zero (lowbit's zero-including range):
// the flush is one nest over B * H * (ceil(5 / 4) * 4) = 16 token rows;
// each row's groups (8 channels in groups of 4; statistics from 0, the
// zero point stored as f32), then its bytes, one code per byte.
// CHECK-LABEL: func @append_values
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c16) step (%c1)
// CHECK: scf.for {{.*}} = %c0 to %c2 step %c1
// CHECK: arith.uitofp {{.*}} : i8 to f32
// CHECK: memref.store {{.*}} : memref<2x1x64x2xf32>
// CHECK: memref.store {{.*}} : memref<2x1x64x2xf32>
// CHECK: scf.for {{.*}} = %c0 to %c8 step %c1
// CHECK: arith.fptosi {{.*}} : f32 to i32
// CHECK-NOT: arith.shli
// CHECK: memref.store {{.*}} : memref<2x1x64x8xi8>
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c10) step (%c1)
func.func @append_values(%v: memref<2x1x5x8xbf16>, %c: memref<2x1x64x8xi8>,
    %s: memref<2x1x64x2xf32>, %z: memref<2x1x64x2xf32>,
    %r: memref<2x1x6x8xbf16>, %l: memref<2xi32>) {
  lowbit.kivi_append %v into %c, %s, %z, %r at %l
      {scheme = "kv_kivi_int2", group_size = 4, residual_window = 2,
       integer_zero}
      : memref<2x1x5x8xbf16>, memref<2x1x64x8xi8>, memref<2x1x64x2xf32>,
        memref<2x1x64x2xf32>, memref<2x1x6x8xbf16>, memref<2xi32>
  return
}

// Dequantize: one nest over B * H * N rows; a row in [0, length) past the
// quantized prefix widens the ring's token, an older one decodes its
// nibble (KIVI: q * scale + mn, two roundings); others are 0.
// CHECK-LABEL: func @dequantize_keys_paged
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c6) step (%c1)
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.shrui
// CHECK: arith.uitofp
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NOT: lowbit.kivi_dequantize
func.func @dequantize_keys_paged(%c: memref<?x1x16x4xi8>,
    %s: memref<?x1x4x8xf32>, %z: memref<?x1x4x8xf32>,
    %r: memref<2x1x6x8xf16>, %p: memref<2xi32>, %l: memref<2xi32>,
    %o: memref<2x1x3x8xf32>, %t: memref<2x?xi32>) {
  lowbit.kivi_dequantize %c, %s, %z, %r at %p, %l into %o table %t
      {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2,
       per_channel}
      : memref<?x1x16x4xi8>, memref<?x1x4x8xf32>, memref<?x1x4x8xf32>,
        memref<2x1x6x8xf16>, memref<2xi32>, memref<2xi32>,
        memref<2x1x3x8xf32>, memref<2x?xi32>
  return
}
