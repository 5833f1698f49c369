// RUN: lowbit-opt %s -split-input-file -verify-diagnostics
//
// N-D shapes the verifiers refuse (docs/quantization.md, N-D tensors).

func.func @f(%x: tensor<2x3x8xf32>) {
  // expected-error @+1 {{scales shape 2x3x1 does not match the scheme's 2x3x2 for a 2x3x8 tensor}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<format = #lowbit.int<"int8">, scale = #lowbit.scale<group(4), type = f32>, packing = byte>}
      : tensor<2x3x8xf32> -> tensor<2x3x8xi8> scales tensor<2x3x1xf32>
  return
}

// -----

func.func @f(%x: tensor<2x3x8xf32>) {
  // expected-error @+1 {{codes shape 6x8 does not match the scheme's 2x3x8 for a 2x3x8 tensor}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<format = #lowbit.int<"int8">, scale = #lowbit.scale<group(4), type = f32>, packing = byte>}
      : tensor<2x3x8xf32> -> tensor<6x8xi8> scales tensor<2x3x2xf32>
  return
}

// -----

func.func @f(%c: tensor<2x3x8xi8>, %s: tensor<6x2xf32>) {
  // expected-error @+1 {{scales shape 6x2 does not match the scheme's 2x3x2 for a 2x3x8 tensor}}
  %y = lowbit.dequantize %c scales(%s : tensor<6x2xf32>) {scheme = #lowbit.scheme<format = #lowbit.int<"int8">, scale = #lowbit.scale<group(4), type = f32>, packing = byte>}
      : tensor<2x3x8xi8> -> tensor<2x3x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x3x16xf32>) {
  // expected-error @+1 {{scales shape 4x3x1 does not match the scheme's 1x1 for a 4x3x16 tensor}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"fp8_e4m3">}
      : tensor<4x3x16xf32> -> tensor<4x3x16xi8> scales tensor<4x3x1xf32>
  return
}

// -----

func.func @f(%x: tensor<64xf32>) {
  // expected-error @+1 {{operand #0 must be tensor of rank >= 2 of 32-bit float or 16-bit float or bfloat16 type values}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<64xf32> -> tensor<64xi8> scales tensor<2xi8>
  return
}
