// RUN: lowbit-opt %s --lowbit-kv-to-loops --canonicalize | FileCheck %s

// The structure lowbit-kv-to-loops emits; the bits are checked by
// tests/kvkernels against kv/KvQuantize.h.

// Multiplier: s = 127 / max(amax, eps), q = clamp(rne(x * s)); the row is
// skipped past the cache.
// One flat nest over the B * H * N rows (the GPU mapping's threadIdx.z
// holds at most 64), delinearized.
// CHECK-LABEL: func @append_int8
// CHECK: scf.parallel (%[[ROW:.*]]) = (%c0) to (%c16) step (%c1)
// CHECK: arith.divui %[[ROW]], %c8
// CHECK: arith.remui %[[ROW]], %c8
// CHECK: memref.load %{{.*}} : memref<2xi32>
// CHECK: arith.cmpi slt, %{{.*}}, %c4096
// CHECK: scf.if
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: arith.divf %cst{{.*}}, %{{.*}} : f32
// CHECK: memref.store {{.*}} : memref<2x8x4096x2xf32>
// CHECK: arith.mulf
// CHECK: math.roundeven
// CHECK: arith.fptosi {{.*}} : f32 to i8
func.func @append_int8(%k: memref<2x8x1x128xf16>,
    %codes: memref<2x8x4096x128xi8>, %scales: memref<2x8x4096x2xf32>,
    %pos: memref<2xi32>) {
  lowbit.kv_append %k into %codes, %scales at %pos
      {scheme = "kv_int8_g64", convention = "multiplier"}
      : memref<2x8x1x128xf16>, memref<2x8x4096x128xi8>,
        memref<2x8x4096x2xf32>, memref<2xi32>
  return
}

// Paged FP8: the page comes from the block table, the slot is pos % 16,
// the code is a saturating lowbit.encode of x / scale[head].
// CHECK-LABEL: func @append_fp8_paged
// CHECK: scf.parallel
// CHECK: arith.divsi %{{.*}}, %c16
// CHECK: memref.load %{{.*}} : memref<1x4xi32>
// CHECK: arith.remsi %{{.*}}, %c16
// CHECK: memref.load %{{.*}} : memref<8xf32>
// CHECK: arith.divf
// CHECK: lowbit.encode {{.*}}#lowbit.float<"e5m2">
// CHECK: memref.store {{.*}} : memref<5x8x16x64xi8>
func.func @append_fp8_paged(%k: memref<1x8x3x64xbf16>,
    %codes: memref<5x8x16x64xi8>, %scales: memref<8xf32>,
    %pos: memref<1xi32>, %table: memref<1x4xi32>) {
  lowbit.kv_append %k into %codes, %scales at %pos table %table
      {scheme = "kv_fp8_e5m2", per_head}
      : memref<1x8x3x64xbf16>, memref<5x8x16x64xi8>, memref<8xf32>,
        memref<1xi32>, memref<1x4xi32>
  return
}

// Divisor dequantize to bf16: q * s, rounded once; zeros outside.
// CHECK-LABEL: func @dequantize_int8
// CHECK: scf.parallel
// CHECK: scf.if
// CHECK: arith.sitofp
// CHECK: arith.mulf
// CHECK: arith.truncf {{.*}} to bf16
// CHECK: } else {
// CHECK: memref.store %cst{{.*}} : memref<2x3x4x8xbf16>
func.func @dequantize_int8(%codes: memref<2x3x20x8xi8>,
    %scales: memref<2x3x20x2xf32>, %pos: memref<2xi32>,
    %out: memref<2x3x4x8xbf16>) {
  lowbit.kv_dequantize %codes, %scales at %pos into %out
      {scheme = "kv_int8_g4", convention = "divisor"}
      : memref<2x3x20x8xi8>, memref<2x3x20x2xf32>, memref<2xi32>,
        memref<2x3x4x8xbf16>
  return
}
