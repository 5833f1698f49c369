// RUN: lowbit-opt %s -split-input-file | FileCheck %s
// RUN: lowbit-opt %s -split-input-file | lowbit-opt -split-input-file | FileCheck %s
// RUN: lowbit-opt %s -split-input-file -mlir-print-op-generic | lowbit-opt -split-input-file | FileCheck %s

// CHECK-LABEL: @mxfp4_dynamic
// CHECK: lowbit.quantize %{{.*}} {scheme = #lowbit.scheme<"mxfp4">} : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
// CHECK: lowbit.dequantize %{{.*}} scales(%{{.*}} : tensor<4x2xi8>) {scheme = #lowbit.scheme<"mxfp4">} : tensor<4x32xi8> -> tensor<4x64xbf16>
func.func @mxfp4_dynamic(%x: tensor<4x64xf32>) -> tensor<4x64xbf16> {
  %codes, %scales = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
  %y = lowbit.dequantize %codes scales(%scales : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp4">} : tensor<4x32xi8> -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}

// -----

// Odd column counts: nibble packing rounds the bytes up and the allowed
// tail rounds the groups up; dequantize takes the 33 from its result type.
// CHECK-LABEL: @nvfp4_ragged
// CHECK: lowbit.quantize %{{.*}} {scheme = #lowbit.scheme<"nvfp4">} : tensor<3x33xf16> -> tensor<3x17xi8> scales tensor<3x3xi8> global tensor<1xf32>
// CHECK: lowbit.dequantize %{{.*}} scales(%{{.*}} : tensor<3x3xi8>) global(%{{.*}} : tensor<1xf32>) {scheme = #lowbit.scheme<"nvfp4">} : tensor<3x17xi8> -> tensor<3x33xf32>
func.func @nvfp4_ragged(%x: tensor<3x33xf16>) -> tensor<3x33xf32> {
  %codes, %scales, %global = lowbit.quantize %x
      {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<3x33xf16> -> tensor<3x17xi8> scales tensor<3x3xi8>
        global tensor<1xf32>
  %y = lowbit.dequantize %codes scales(%scales : tensor<3x3xi8>)
      global(%global : tensor<1xf32>) {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<3x17xi8> -> tensor<3x33xf32>
  return %y : tensor<3x33xf32>
}

// -----

// A dynamic scheme may be handed its global scale (as vLLM does).
// CHECK-LABEL: @nvfp4_given_global
// CHECK: lowbit.quantize %{{.*}} global(%{{.*}} : tensor<1x1xf32>) {scheme = #lowbit.scheme<"nvfp4">} : tensor<128x64xbf16> -> tensor<128x32xi8> scales tensor<128x4xi8>
func.func @nvfp4_given_global(%x: tensor<128x64xbf16>, %g: tensor<1x1xf32>)
    -> (tensor<128x32xi8>, tensor<128x4xi8>) {
  %codes, %scales = lowbit.quantize %x global(%g : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<128x64xbf16> -> tensor<128x32xi8> scales tensor<128x4xi8>
  return %codes, %scales : tensor<128x32xi8>, tensor<128x4xi8>
}

// -----

// CHECK-LABEL: @int4_g128_zero_points
// CHECK: lowbit.quantize %{{.*}} {scheme = #lowbit.scheme<"int4_g128">} : tensor<2x256xf16> -> tensor<2x128xi8> scales tensor<2x2xf16> zeros tensor<2x2xi8>
// CHECK: lowbit.dequantize %{{.*}} scales(%{{.*}} : tensor<2x2xf16>) zeros(%{{.*}} : tensor<2x2xi8>) {scheme = #lowbit.scheme<"int4_g128">} : tensor<2x128xi8> -> tensor<2x256xf16>
func.func @int4_g128_zero_points(%x: tensor<2x256xf16>) -> tensor<2x256xf16> {
  %codes, %scales, %zeros = lowbit.quantize %x
      {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<2x256xf16> -> tensor<2x128xi8> scales tensor<2x2xf16>
        zeros tensor<2x2xi8>
  %y = lowbit.dequantize %codes scales(%scales : tensor<2x2xf16>)
      zeros(%zeros : tensor<2x2xi8>) {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<2x128xi8> -> tensor<2x256xf16>
  return %y : tensor<2x256xf16>
}

// -----

// Static mode: the scales and zero points are operands.
// CHECK-LABEL: @static_asymmetric
// CHECK: lowbit.quantize %{{.*}} scales(%{{.*}} : tensor<8x1xbf16>) zeros(%{{.*}} : tensor<8x1xi8>) {scheme = #lowbit.scheme<format = #lowbit.int<"uint8">, scale = #lowbit.scale<per_token, {{.*}} mode = static, zero_point = true, {{.*}}>, packing = byte>} : tensor<8x16xf32> -> tensor<8x16xi8>
func.func @static_asymmetric(%x: tensor<8x16xf32>, %s: tensor<8x1xbf16>,
                             %z: tensor<8x1xi8>) -> tensor<8x16xi8> {
  %codes = lowbit.quantize %x scales(%s : tensor<8x1xbf16>)
      zeros(%z : tensor<8x1xi8>)
      {scheme = #lowbit.scheme<format = #lowbit.int<"uint8">,
          scale = #lowbit.scale<per_token, type = bf16, rule = minmax,
                                mode = static, zero_point = true>,
          packing = byte>}
      : tensor<8x16xf32> -> tensor<8x16xi8>
  return %codes : tensor<8x16xi8>
}

// -----

// Dynamic dimensions are checked only where both sides are static.
// CHECK-LABEL: @dynamic_dims
// CHECK: lowbit.quantize %{{.*}} {scheme = #lowbit.scheme<"mxfp8">} : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
// CHECK: lowbit.quantize %{{.*}} {scheme = #lowbit.scheme<"mxfp8">} : tensor<?x64xf32> -> tensor<16x64xi8> scales tensor<?x2xi8>
// CHECK: lowbit.dequantize %{{.*}} scales(%{{.*}} : tensor<1x1xf32>) {scheme = #lowbit.scheme<"fp8_e4m3">} : tensor<?x8xi8> -> tensor<?x8xf32>
func.func @dynamic_dims(%x: tensor<?x?xf32>, %y: tensor<?x64xf32>,
                        %c: tensor<?x8xi8>, %s: tensor<1x1xf32>) {
  %c0, %s0 = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  %c1, %s1 = lowbit.quantize %y {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<?x64xf32> -> tensor<16x64xi8> scales tensor<?x2xi8>
  %d = lowbit.dequantize %c scales(%s : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<"fp8_e4m3">} : tensor<?x8xi8> -> tensor<?x8xf32>
  return
}

// -----

// Swizzled scales pad rows to 128 and scale columns to 4.
// CHECK-LABEL: @swizzled
// CHECK: lowbit.quantize {{.*}} : tensor<2x64xf32> -> tensor<2x64xi8> scales tensor<128x4xi8>
func.func @swizzled(%x: tensor<2x64xf32>) {
  %codes, %scales = lowbit.quantize %x
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<group(32), type = e8m0, rule = rceil,
                                layout = swizzle_128x4>,
          packing = byte>}
      : tensor<2x64xf32> -> tensor<2x64xi8> scales tensor<128x4xi8>
  return
}
