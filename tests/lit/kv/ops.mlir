// RUN: lowbit-opt %s | FileCheck %s
// RUN: lowbit-opt %s | lowbit-opt | FileCheck %s

// Round trips of lowbit.kv_append and lowbit.kv_dequantize: every scheme,
// contiguous and paged, static and dynamic sizes.

// CHECK-LABEL: func @append_int8_contiguous
// CHECK: lowbit.kv_append %arg0 into %arg1, %arg2 at %arg3 {convention = "multiplier", scheme = "kv_int8_g64"} : memref<2x8x1x128xf16>, memref<2x8x4096x128xi8>, memref<2x8x4096x2xf32>, memref<2xi32>
func.func @append_int8_contiguous(%k: memref<2x8x1x128xf16>,
    %codes: memref<2x8x4096x128xi8>, %scales: memref<2x8x4096x2xf32>,
    %pos: memref<2xi32>) {
  lowbit.kv_append %k into %codes, %scales at %pos
      {scheme = "kv_int8_g64", convention = "multiplier"}
      : memref<2x8x1x128xf16>, memref<2x8x4096x128xi8>,
        memref<2x8x4096x2xf32>, memref<2xi32>
  return
}

// A ragged last group (40 = 32 + 8), the divisor convention, an epsilon.
// CHECK-LABEL: func @append_int8_paged
// CHECK: lowbit.kv_append %arg0 into %arg1, %arg2 at %arg3 table %arg4 {convention = "divisor", epsilon = 9.99999974E-6 : f32, scheme = "kv_int8_g32"} : memref<?x4x?x40xbf16>, memref<?x4x16x40xi8>, memref<?x4x16x2xf32>, memref<?xi32>, memref<?x?xi32>
func.func @append_int8_paged(%k: memref<?x4x?x40xbf16>,
    %codes: memref<?x4x16x40xi8>, %scales: memref<?x4x16x2xf32>,
    %pos: memref<?xi32>, %table: memref<?x?xi32>) {
  lowbit.kv_append %k into %codes, %scales at %pos table %table
      {scheme = "kv_int8_g32", convention = "divisor", epsilon = 1.0e-5 : f32}
      : memref<?x4x?x40xbf16>, memref<?x4x16x40xi8>, memref<?x4x16x2xf32>,
        memref<?xi32>, memref<?x?xi32>
  return
}

// CHECK-LABEL: func @append_fp8_per_head
// CHECK: lowbit.kv_append %arg0 into %arg1, %arg2 at %arg3 table %arg4 {per_head, scheme = "kv_fp8_e4m3"} : memref<1x8x3x64xf16>, memref<5x8x16x64xi8>, memref<8xf32>, memref<1xi32>, memref<1x4xi32>
func.func @append_fp8_per_head(%k: memref<1x8x3x64xf16>,
    %codes: memref<5x8x16x64xi8>, %scales: memref<8xf32>,
    %pos: memref<1xi32>, %table: memref<1x4xi32>) {
  lowbit.kv_append %k into %codes, %scales at %pos table %table
      {scheme = "kv_fp8_e4m3", per_head}
      : memref<1x8x3x64xf16>, memref<5x8x16x64xi8>, memref<8xf32>,
        memref<1xi32>, memref<1x4xi32>
  return
}

// CHECK-LABEL: func @dequantize_fp8_per_tensor
// CHECK: lowbit.kv_dequantize %arg0, %arg1 at %arg2 into %arg3 {scheme = "kv_fp8_e5m2"} : memref<2x8x64x128xi8>, memref<1xf32>, memref<2xi32>, memref<2x8x64x128xf32>
func.func @dequantize_fp8_per_tensor(%codes: memref<2x8x64x128xi8>,
    %scales: memref<1xf32>, %pos: memref<2xi32>,
    %out: memref<2x8x64x128xf32>) {
  lowbit.kv_dequantize %codes, %scales at %pos into %out
      {scheme = "kv_fp8_e5m2"}
      : memref<2x8x64x128xi8>, memref<1xf32>, memref<2xi32>,
        memref<2x8x64x128xf32>
  return
}

// CHECK-LABEL: func @dequantize_int8_paged
// CHECK: lowbit.kv_dequantize %arg0, %arg1 at %arg2 into %arg3 table %arg4 {convention = "multiplier", scheme = "kv_int8_g4"} : memref<3x3x16x8xi8>, memref<3x3x16x2xf32>, memref<2xi32>, memref<2x3x20x8xbf16>, memref<2x2xi32>
func.func @dequantize_int8_paged(%codes: memref<3x3x16x8xi8>,
    %scales: memref<3x3x16x2xf32>, %pos: memref<2xi32>,
    %out: memref<2x3x20x8xbf16>, %table: memref<2x2xi32>) {
  lowbit.kv_dequantize %codes, %scales at %pos into %out table %table
      {scheme = "kv_int8_g4", convention = "multiplier"}
      : memref<3x3x16x8xi8>, memref<3x3x16x2xf32>, memref<2xi32>,
        memref<2x3x20x8xbf16>, memref<2x2xi32>
  return
}
