// RUN: lowbit-opt %s -split-input-file -verify-diagnostics --lowbit-matmul-to-loops | FileCheck %s
// RUN: lowbit-opt %s -split-input-file -verify-diagnostics --lowbit-matmul-to-loops --lowbit-to-loops | FileCheck %s --check-prefix=LOOPS
// The CPU pipeline runs it (before lowbit-to-loops):
// RUN: lowbit-opt %s -split-input-file -verify-diagnostics --lowbit-to-loops-for-cpu | FileCheck %s --check-prefix=LOOPS
//
// lowbit-matmul-to-loops: the weights through the scheme's own dequantize
// into an [N, K] scratch of X's dtype, then one scf.parallel unit per
// (m, n) running docs/matmul.md's order: 32 slices, each an fma chain over
// its chunks (every 1024th k from slice * 32, 32 wide), the slices summed
// in order, the bias added, the result rounded with the canonical NaN.

// CHECK-LABEL: func.func @int4_bf16
// CHECK-NOT: lowbit.matmul
// CHECK: %[[W:.*]] = memref.alloc() : memref<96x256xbf16>
// CHECK: %[[D:.*]] = lowbit.dequantize %{{.*}} scales(%{{.*}} : tensor<96x2xf16>) zeros(%{{.*}} : tensor<96x2xi8>) {scheme = #lowbit.scheme<"int4_g128">} : tensor<96x128xi8> -> tensor<96x256xbf16>
// CHECK: bufferization.materialize_in_destination %[[D]] in restrict writable %[[W]]
// CHECK: scf.parallel (%[[M:.*]], %[[N:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %c96) step
// CHECK: scf.for %[[S:.*]] = %{{.*}} to %c32 step %{{.*}} iter_args(%[[ACC:.*]] = %cst)
// CHECK: %[[FIRST:.*]] = arith.muli %[[S]], %c32
// CHECK: scf.for %[[C:.*]] = %[[FIRST]] to %c256 step %c1024 iter_args(%[[P:.*]] = %cst
// CHECK: %[[END:.*]] = arith.minui
// CHECK: scf.for %[[K:.*]] = %[[C]] to %[[END]] step %{{.*}} iter_args(%[[Q:.*]] = %[[P]])
// CHECK: memref.load %{{.*}}[%[[M]], %[[K]]] : memref<?x256xbf16>
// CHECK: arith.extf
// CHECK: memref.load %[[W]][%[[N]], %[[K]]] : memref<96x256xbf16>
// CHECK: arith.extf
// CHECK: math.fma %{{.*}}, %{{.*}}, %[[Q]] : f32
// CHECK: arith.addf %[[ACC]], %{{.*}} : f32
// CHECK: memref.load %{{.*}}[%[[N]]] : memref<96xf32>
// CHECK: arith.addf
// CHECK: arith.constant 0x7FFF : bf16
// CHECK: arith.cmpf uno
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.select
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[M]], %[[N]]] : memref<?x96xbf16>
// CHECK: memref.dealloc %[[W]]
// LOOPS-LABEL: func.func @int4_bf16
// LOOPS-NOT: lowbit.dequantize
// LOOPS-NOT: lowbit.matmul
// LOOPS: math.fma
func.func @int4_bf16(%x: memref<?x256xbf16>, %c: memref<96x128xi8>,
                     %s: memref<96x2xf16>, %z: memref<96x2xi8>,
                     %b: memref<96xf32>, %y: memref<?x96xbf16>) {
  %xt = bufferization.to_tensor %x restrict : memref<?x256xbf16> to tensor<?x256xbf16>
  %ct = bufferization.to_tensor %c restrict : memref<96x128xi8> to tensor<96x128xi8>
  %st = bufferization.to_tensor %s restrict : memref<96x2xf16> to tensor<96x2xf16>
  %zt = bufferization.to_tensor %z restrict : memref<96x2xi8> to tensor<96x2xi8>
  %bt = bufferization.to_tensor %b restrict : memref<96xf32> to tensor<96xf32>
  %r = lowbit.matmul %xt, %ct scales(%st : tensor<96x2xf16>)
      zeros(%zt : tensor<96x2xi8>) bias(%bt : tensor<96xf32>)
      {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<?x256xbf16>, tensor<96x128xi8> -> tensor<?x96xbf16>
  bufferization.materialize_in_destination %r in restrict writable %y
      : (tensor<?x96xbf16>, memref<?x96xbf16>) -> ()
  return
}

// -----

// f32 X and Y: no widening, the canonical NaN 0x7fffffff (NaN), no bias.
// CHECK-LABEL: func.func @nvfp4_f32
// CHECK: %[[D:.*]] = lowbit.dequantize %{{.*}} scales(%{{.*}} : tensor<?x?xi8>) global(%{{.*}} : tensor<1xf32>) {scheme = #lowbit.scheme<"nvfp4">} : tensor<?x?xi8> -> tensor<?x?xf32>
// CHECK-NOT: arith.extf
// CHECK: math.fma
// CHECK-NOT: arith.truncf
// CHECK: arith.constant 0x7FFFFFFF : f32
// CHECK: arith.select
func.func @nvfp4_f32(%x: memref<?x?xf32>, %c: memref<?x?xi8>,
                     %s: memref<?x?xi8>, %g: memref<1xf32>,
                     %y: memref<?x?xf32>) {
  %xt = bufferization.to_tensor %x restrict : memref<?x?xf32> to tensor<?x?xf32>
  %ct = bufferization.to_tensor %c restrict : memref<?x?xi8> to tensor<?x?xi8>
  %st = bufferization.to_tensor %s restrict : memref<?x?xi8> to tensor<?x?xi8>
  %gt = bufferization.to_tensor %g restrict : memref<1xf32> to tensor<1xf32>
  %r = lowbit.matmul %xt, %ct scales(%st : tensor<?x?xi8>)
      global(%gt : tensor<1xf32>) {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<?x?xf32>, tensor<?x?xi8> -> tensor<?x?xf32>
  bufferization.materialize_in_destination %r in restrict writable %y
      : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
  return
}

// -----

func.func @no_destination(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>,
                          %s: tensor<4x2xi8>) -> tensor<3x4xf32> {
  // expected-error @+1 {{lowers only with its result written by one bufferization.materialize_in_destination into a memref defined before it}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
