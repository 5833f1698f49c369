// RUN: lowbit-opt %s --lowbit-kivi-to-loops --canonicalize | FileCheck %s

// The structure lowbit-kivi-to-loops emits for kivi_decode_attention; the
// bits are checked by tests/kvattention (kivi-attention:) against
// kv/KiviDecodeOrder.h.

// Contiguous, int4 keys per channel, G = 4, R = 2, split 8 over 16 tokens:
// stage 1 over B * Hkv * 2 splits, per query head of the group (2) the
// max over the split's logits, each logit one fma chain reading the ring
// (slot t mod 6, f16 widened) at or past the quantized prefix
// (floor(max(0, T - 2) / 4) * 4) and else the nibble codes with the
// group's scale and zero point (row t / 4 of the per-channel parameters);
// then lowbit's exp (roundeven inside) and the weighted values. Stage 2
// over B * Hq (sequence, query head), the used splits (ceil(T / 8)),
// out / L only when T > 0.
// CHECK-LABEL: func @contiguous
// CHECK-NOT: lowbit.kivi_decode_attention
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c2) step (%c1)
// CHECK: arith.maxsi
// CHECK: arith.divsi %{{.*}}, %c4
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK: arith.cmpi sge
// CHECK: scf.if %{{.*}} -> (f32)
// CHECK: arith.remsi %{{.*}}, %c6
// CHECK: memref.load %arg4{{.*}} : memref<1x1x6x8xf16>
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: math.fma
// CHECK: } else {
// CHECK: memref.load %arg1{{.*}} : memref<1x1x16x4xi8>
// CHECK: arith.shrui
// CHECK: memref.load %arg2{{.*}} : memref<1x1x4x8xf32>
// CHECK: memref.load %arg3{{.*}} : memref<1x1x4x8xf32>
// CHECK: arith.uitofp
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: math.fma
// CHECK: arith.cmpf ogt
// CHECK: math.roundeven
// CHECK: memref.load %arg8{{.*}} : memref<1x1x6x8xf16>
// CHECK: memref.store {{.*}} : memref<1x1x2x2x10xf32>
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c2) step (%c1)
// CHECK: arith.ceildivsi %{{.*}}, %c8
// CHECK: arith.cmpf ogt
// CHECK: math.fma
// CHECK: arith.cmpi ne
// CHECK: arith.divf
// CHECK: memref.store {{.*}} : memref<1x2x8xf32>

// Paged, keys per token: the codes' page comes from the block table (read
// only for a block inside the table), both sides' parameters are the
// codes' rows with ceil(8 / 4) columns; 4 splits over 2 blocks.
// CHECK-LABEL: func @paged
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c4) step (%c1)
// CHECK: memref.load %arg12{{.*}} : memref<1x2xi32>
// CHECK: memref.load %arg1{{.*}} : memref<3x1x16x4xi8>
// CHECK: memref.load %arg2{{.*}} : memref<3x1x16x2xf32>
// CHECK: memref.load %arg12{{.*}} : memref<1x2xi32>
// CHECK: memref.load %arg5{{.*}} : memref<3x1x16x4xi8>
// CHECK: memref.load %arg6{{.*}} : memref<3x1x16x2xf32>
// CHECK: scf.parallel
func.func @contiguous(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

func.func @paged(%q: memref<1x2x8xf32>, %kc: memref<3x1x16x4xi8>, %ks: memref<3x1x16x2xf32>, %kz: memref<3x1x16x2xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<3x1x16x4xi8>, %vs: memref<3x1x16x2xf32>, %vz: memref<3x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x4x2x10xf32>, %t: memref<1x2xi32>) {
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p table %t {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, softmax_scale = 1.0 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<3x1x16x4xi8>, memref<3x1x16x2xf32>, memref<3x1x16x2xf32>, memref<1x1x6x8xf16>, memref<3x1x16x4xi8>, memref<3x1x16x2xf32>, memref<3x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x4x2x10xf32>, memref<1x2xi32>
  return
}
