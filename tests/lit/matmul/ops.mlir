// lowbit.matmul parses, verifies and prints back (round trip), with every
// optional operand and the weight schemes' buffers (docs/matmul.md).
//
// RUN: lowbit-opt %s | FileCheck %s
// RUN: lowbit-opt %s | lowbit-opt | FileCheck %s

// CHECK-LABEL: func.func @int4_g128
// CHECK: lowbit.matmul %{{.*}}, %{{.*}} scales(%{{.*}} : tensor<96x2xf16>) zeros(%{{.*}} : tensor<96x2xi8>) bias(%{{.*}} : tensor<96xf32>) {scheme = #lowbit.scheme<"int4_g128">} : tensor<?x256xbf16>, tensor<96x128xi8> -> tensor<?x96xbf16>
func.func @int4_g128(%x: tensor<?x256xbf16>, %c: tensor<96x128xi8>,
                     %s: tensor<96x2xf16>, %z: tensor<96x2xi8>,
                     %b: tensor<96xf32>) -> tensor<?x96xbf16> {
  %y = lowbit.matmul %x, %c scales(%s : tensor<96x2xf16>)
      zeros(%z : tensor<96x2xi8>) bias(%b : tensor<96xf32>)
      {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<?x256xbf16>, tensor<96x128xi8> -> tensor<?x96xbf16>
  return %y : tensor<?x96xbf16>
}

// CHECK-LABEL: func.func @nvfp4
// CHECK: lowbit.matmul %{{.*}}, %{{.*}} scales(%{{.*}} : tensor<?x?xi8>) global(%{{.*}} : tensor<1xf32>) {scheme = #lowbit.scheme<"nvfp4">} : tensor<?x?xf16>, tensor<?x?xi8> -> tensor<?x?xf32>
func.func @nvfp4(%x: tensor<?x?xf16>, %c: tensor<?x?xi8>, %s: tensor<?x?xi8>,
                 %g: tensor<1xf32>) -> tensor<?x?xf32> {
  %y = lowbit.matmul %x, %c scales(%s : tensor<?x?xi8>)
      global(%g : tensor<1xf32>) {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<?x?xf16>, tensor<?x?xi8> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @per_channel
// CHECK: lowbit.matmul %{{.*}}, %{{.*}} scales(%{{.*}} : tensor<7x1xf32>) {scheme = #lowbit.scheme<format = #lowbit.int<"int8">, scale = #lowbit.scale<per_channel(axis = 0), tail = false, type = f32, rule = absmax, mode = dynamic, zero_point = false, global = none, layout = row_major>, packing = byte>} : tensor<3x40xf32>, tensor<7x40xi8> -> tensor<3x7xf16>
func.func @per_channel(%x: tensor<3x40xf32>, %c: tensor<7x40xi8>,
                       %s: tensor<7x1xf32>) -> tensor<3x7xf16> {
  %y = lowbit.matmul %x, %c scales(%s : tensor<7x1xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.int<"int8">,
          scale = #lowbit.scale<per_channel(axis = 0)>, packing = byte>}
      : tensor<3x40xf32>, tensor<7x40xi8> -> tensor<3x7xf16>
  return %y : tensor<3x7xf16>
}

// An odd K with nibble packing: the codes hold ceil(K / 2) bytes a row.
// CHECK-LABEL: func.func @mxfp4_ragged
// CHECK: lowbit.matmul %{{.*}}, %{{.*}} scales(%{{.*}} : tensor<5x4xi8>) {scheme = #lowbit.scheme<"mxfp4">} : tensor<17x99xf32>, tensor<5x50xi8> -> tensor<17x5xf32>
func.func @mxfp4_ragged(%x: tensor<17x99xf32>, %c: tensor<5x50xi8>,
                        %s: tensor<5x4xi8>) -> tensor<17x5xf32> {
  %y = lowbit.matmul %x, %c scales(%s : tensor<5x4xi8>)
      {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<17x99xf32>, tensor<5x50xi8> -> tensor<17x5xf32>
  return %y : tensor<17x5xf32>
}

// Quantized activations: the act_scheme attribute round-trips.
// CHECK-LABEL: func.func @w4a4
// CHECK: lowbit.matmul %{{.*}}, %{{.*}} scales(%{{.*}} : tensor<8x2xi8>) {act_scheme = #lowbit.scheme<"mxfp4">, scheme = #lowbit.scheme<"mxfp4">} : tensor<?x64xbf16>, tensor<8x32xi8> -> tensor<?x8xbf16>
func.func @w4a4(%x: tensor<?x64xbf16>, %c: tensor<8x32xi8>,
                %s: tensor<8x2xi8>) -> tensor<?x8xbf16> {
  %y = lowbit.matmul %x, %c scales(%s : tensor<8x2xi8>)
      {scheme = #lowbit.scheme<"mxfp4">, act_scheme = #lowbit.scheme<"mxfp4">}
      : tensor<?x64xbf16>, tensor<8x32xi8> -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}
