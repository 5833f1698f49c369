// RUN: lowbit-opt %s | FileCheck %s
// RUN: lowbit-opt %s | lowbit-opt | FileCheck %s

// Round trips of lowbit.kivi_append and lowbit.kivi_dequantize: int4 and
// int2, keys per channel and values per token, contiguous and paged,
// static and dynamic sizes.

// CHECK-LABEL: func @append_int4_keys_contiguous
// CHECK: lowbit.kivi_append %arg0 into %arg1, %arg2, %arg3, %arg4 at %arg5 {group_size = 32 : i64, per_channel, residual_window = 128 : i64, scheme = "kv_kivi_int4"} : memref<2x8x1x128xf16>, memref<2x8x4096x64xi8>, memref<2x8x128x128xf32>, memref<2x8x128x128xf32>, memref<2x8x160x128xf16>, memref<2xi32>
func.func @append_int4_keys_contiguous(%k: memref<2x8x1x128xf16>,
    %codes: memref<2x8x4096x64xi8>, %scales: memref<2x8x128x128xf32>,
    %zeros: memref<2x8x128x128xf32>, %ring: memref<2x8x160x128xf16>,
    %lengths: memref<2xi32>) {
  lowbit.kivi_append %k into %codes, %scales, %zeros, %ring at %lengths
      {scheme = "kv_kivi_int4", group_size = 32, residual_window = 128,
       per_channel}
      : memref<2x8x1x128xf16>, memref<2x8x4096x64xi8>,
        memref<2x8x128x128xf32>, memref<2x8x128x128xf32>,
        memref<2x8x160x128xf16>, memref<2xi32>
  return
}

// Values per token, int2 (one code per byte), head_dim 40 in groups of 32
// (ceil = 2 columns), R = 0: the ring holds G tokens.
// CHECK-LABEL: func @append_int2_values_paged
// CHECK: lowbit.kivi_append %arg0 into %arg1, %arg2, %arg3, %arg4 at %arg5 table %arg6 {group_size = 32 : i64, residual_window = 0 : i64, scheme = "kv_kivi_int2"} : memref<?x8x?x40xbf16>, memref<?x8x16x40xi8>, memref<?x8x16x2xf32>, memref<?x8x16x2xf32>, memref<?x8x32x40xbf16>, memref<?xi32>, memref<?x?xi32>
func.func @append_int2_values_paged(%v: memref<?x8x?x40xbf16>,
    %codes: memref<?x8x16x40xi8>, %scales: memref<?x8x16x2xf32>,
    %zeros: memref<?x8x16x2xf32>, %ring: memref<?x8x32x40xbf16>,
    %lengths: memref<?xi32>, %table: memref<?x?xi32>) {
  lowbit.kivi_append %v into %codes, %scales, %zeros, %ring at %lengths
      table %table
      {scheme = "kv_kivi_int2", group_size = 32, residual_window = 0}
      : memref<?x8x?x40xbf16>, memref<?x8x16x40xi8>, memref<?x8x16x2xf32>,
        memref<?x8x16x2xf32>, memref<?x8x32x40xbf16>, memref<?xi32>,
        memref<?x?xi32>
  return
}

// Keys per channel, paged: G = 5 gives ceil(16 / 5) = 4 parameter rows per
// page; head_dim 13 packs into 7 bytes.
// CHECK-LABEL: func @dequantize_int4_keys_paged
// CHECK: lowbit.kivi_dequantize %arg0, %arg1, %arg2, %arg3 at %arg4, %arg5 into %arg6 table %arg7 {group_size = 5 : i64, per_channel, residual_window = 3 : i64, scheme = "kv_kivi_int4"} : memref<?x2x16x7xi8>, memref<?x2x4x13xf32>, memref<?x2x4x13xf32>, memref<2x2x8x13xf16>, memref<2xi32>, memref<2xi32>, memref<2x2x?x13xbf16>, memref<2x?xi32>
func.func @dequantize_int4_keys_paged(%codes: memref<?x2x16x7xi8>,
    %scales: memref<?x2x4x13xf32>, %zeros: memref<?x2x4x13xf32>,
    %ring: memref<2x2x8x13xf16>, %start: memref<2xi32>,
    %lengths: memref<2xi32>, %out: memref<2x2x?x13xbf16>,
    %table: memref<2x?xi32>) {
  lowbit.kivi_dequantize %codes, %scales, %zeros, %ring at %start, %lengths
      into %out table %table
      {scheme = "kv_kivi_int4", group_size = 5, residual_window = 3,
       per_channel}
      : memref<?x2x16x7xi8>, memref<?x2x4x13xf32>, memref<?x2x4x13xf32>,
        memref<2x2x8x13xf16>, memref<2xi32>, memref<2xi32>,
        memref<2x2x?x13xbf16>, memref<2x?xi32>
  return
}

// CHECK-LABEL: func @dequantize_int2_values_contiguous
// CHECK: lowbit.kivi_dequantize %arg0, %arg1, %arg2, %arg3 at %arg4, %arg5 into %arg6 {group_size = 32 : i64, residual_window = 128 : i64, scheme = "kv_kivi_int2"} : memref<1x4x512x64xi8>, memref<1x4x512x2xf32>, memref<1x4x512x2xf32>, memref<1x4x160x64xf16>, memref<1xi32>, memref<1xi32>, memref<1x4x9x64xf32>
func.func @dequantize_int2_values_contiguous(%codes: memref<1x4x512x64xi8>,
    %scales: memref<1x4x512x2xf32>, %zeros: memref<1x4x512x2xf32>,
    %ring: memref<1x4x160x64xf16>, %start: memref<1xi32>,
    %lengths: memref<1xi32>, %out: memref<1x4x9x64xf32>) {
  lowbit.kivi_dequantize %codes, %scales, %zeros, %ring at %start, %lengths
      into %out
      {scheme = "kv_kivi_int2", group_size = 32, residual_window = 128}
      : memref<1x4x512x64xi8>, memref<1x4x512x2xf32>, memref<1x4x512x2xf32>,
        memref<1x4x160x64xf16>, memref<1xi32>, memref<1xi32>,
        memref<1x4x9x64xf32>
  return
}
