// RUN: lowbit-opt --lowbit-to-loops --canonicalize %s | FileCheck %s

// One scf.parallel over rows x packed bytes; each nibble is decoded,
// scaled by its group's decoded e8m0 scale and rounded to f16 (RNE).
// CHECK-LABEL: func.func @mxfp4_to_f16
// CHECK-NOT: bufferization.
// CHECK: scf.parallel
// CHECK: memref.load %arg0
// CHECK: arith.andi %{{.*}}, %c15_i8
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e8m0">} : i8 to f32
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e2m1">} : i8 to f32
// CHECK: arith.mulf
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: memref.store %{{.*}}, %arg2
// CHECK: scf.if
// CHECK: arith.shrui %{{.*}}, %c4_i8
func.func @mxfp4_to_f16(%codes: memref<?x?xi8>, %scales: memref<?x?xi8>,
                        %out: memref<?x?xf16>) {
  %c = bufferization.to_tensor %codes restrict : memref<?x?xi8> to tensor<?x?xi8>
  %s = bufferization.to_tensor %scales restrict : memref<?x?xi8> to tensor<?x?xi8>
  %y = lowbit.dequantize %c scales(%s : tensor<?x?xi8>)
      {scheme = #lowbit.scheme<"mxfp4">} : tensor<?x?xi8> -> tensor<?x?xf16>
  bufferization.materialize_in_destination %y in restrict writable %out
      : (tensor<?x?xf16>, memref<?x?xf16>) -> ()
  return
}

// Asymmetric: (q - zero) * scale in integers, then f32.
// CHECK-LABEL: func.func @int4_g128
// CHECK: arith.subi
// CHECK: arith.sitofp
// CHECK: arith.mulf
func.func @int4_g128(%codes: memref<?x?xi8>, %scales: memref<?x?xf16>,
                     %zeros: memref<?x?xi8>, %out: memref<?x?xf32>) {
  %c = bufferization.to_tensor %codes restrict : memref<?x?xi8> to tensor<?x?xi8>
  %s = bufferization.to_tensor %scales restrict : memref<?x?xf16> to tensor<?x?xf16>
  %z = bufferization.to_tensor %zeros restrict : memref<?x?xi8> to tensor<?x?xi8>
  %y = lowbit.dequantize %c scales(%s : tensor<?x?xf16>)
      zeros(%z : tensor<?x?xi8>) {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<?x?xi8> -> tensor<?x?xf32>
  bufferization.materialize_in_destination %y in restrict writable %out
      : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
  return
}
