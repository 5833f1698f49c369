// RUN: lowbit-opt %s | FileCheck %s
// RUN: lowbit-opt %s | lowbit-opt | FileCheck %s

// Round trips of lowbit.kivi_decode_attention: int4 keys per channel
// (contiguous, static), int2 keys per token (paged, dynamic sizes, a bf16
// query and ring).

// CHECK-LABEL: func @int4_contiguous
// CHECK: lowbit.kivi_decode_attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8 at %arg9 into %arg10, %arg11 {group_size = 4 : i64, per_channel_keys, residual_window = 2 : i64, scheme = "kv_kivi_int4", softmax_scale = 5.000000e-01 : f32, split_tokens = 8 : i64} : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
func.func @int4_contiguous(%q: memref<1x2x8xf32>, %kc: memref<1x1x16x4xi8>, %ks: memref<1x1x4x8xf32>, %kz: memref<1x1x4x8xf32>, %kr: memref<1x1x6x8xf16>, %vc: memref<1x1x16x4xi8>, %vs: memref<1x1x16x2xf32>, %vz: memref<1x1x16x2xf32>, %vr: memref<1x1x6x8xf16>, %l: memref<1xi32>, %o: memref<1x2x8xf32>, %p: memref<1x1x2x2x10xf32>) {
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p {scheme = "kv_kivi_int4", group_size = 4, residual_window = 2, per_channel_keys, softmax_scale = 0.5 : f32, split_tokens = 8}
      : memref<1x2x8xf32>, memref<1x1x16x4xi8>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x6x8xf16>, memref<1x1x16x4xi8>, memref<1x1x16x2xf32>, memref<1x1x16x2xf32>, memref<1x1x6x8xf16>, memref<1xi32>, memref<1x2x8xf32>, memref<1x1x2x2x10xf32>
  return
}

// CHECK-LABEL: func @int2_paged_dynamic
// CHECK: lowbit.kivi_decode_attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8 at %arg9 into %arg10, %arg11 table %arg12 {group_size = 5 : i64, residual_window = 128 : i64, scheme = "kv_kivi_int2", softmax_scale = 1.250000e-01 : f32, split_tokens = 64 : i64} : memref<?x8x64xbf16>, memref<?x2x16x64xi8>, memref<?x2x16x13xf32>, memref<?x2x16x13xf32>, memref<?x2x133x64xbf16>, memref<?x2x16x64xi8>, memref<?x2x16x13xf32>, memref<?x2x16x13xf32>, memref<?x2x133x64xbf16>, memref<?xi32>, memref<?x8x64xf32>, memref<?x2x?x4x66xf32>, memref<?x?xi32>
func.func @int2_paged_dynamic(%q: memref<?x8x64xbf16>, %kc: memref<?x2x16x64xi8>, %ks: memref<?x2x16x13xf32>, %kz: memref<?x2x16x13xf32>, %kr: memref<?x2x133x64xbf16>, %vc: memref<?x2x16x64xi8>, %vs: memref<?x2x16x13xf32>, %vz: memref<?x2x16x13xf32>, %vr: memref<?x2x133x64xbf16>, %l: memref<?xi32>, %o: memref<?x8x64xf32>, %p: memref<?x2x?x4x66xf32>, %t: memref<?x?xi32>) {
  lowbit.kivi_decode_attention %q, %kc, %ks, %kz, %kr, %vc, %vs, %vz, %vr at %l into %o, %p table %t {scheme = "kv_kivi_int2", group_size = 5, residual_window = 128, softmax_scale = 0.125 : f32, split_tokens = 64}
      : memref<?x8x64xbf16>, memref<?x2x16x64xi8>, memref<?x2x16x13xf32>, memref<?x2x16x13xf32>, memref<?x2x133x64xbf16>, memref<?x2x16x64xi8>, memref<?x2x16x13xf32>, memref<?x2x16x13xf32>, memref<?x2x133x64xbf16>, memref<?xi32>, memref<?x8x64xf32>, memref<?x2x?x4x66xf32>, memref<?x?xi32>
  return
}
