// RUN: lowbit-opt %s -split-input-file -verify-diagnostics --lowbit-attention-to-loops | FileCheck %s
//
// lowbit-attention-to-loops: two flat scf.parallel nests (the splits, then
// their merge), dequantization where the loops read the codes, lowbit's
// exp, and the op gone. Reshaped views of 2-D parameters are read through
// (the kernels take the 2-D parameters).

// CHECK-LABEL: func.func @fp8_per_head
// CHECK-NOT: lowbit.kv_decode_attention
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e4m3">} : i8 to f32
// CHECK: math.fma
// CHECK: arith.cmpf ogt
// CHECK: math.roundeven
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK: arith.ceildivui
// CHECK: scf.if
// CHECK: arith.divf
func.func @fp8_per_head(%q: memref<2x4x8xf32>, %kc: memref<2x2x20x8xi8>, %ks: memref<2xf32>, %vc: memref<2x2x20x8xi8>, %vs: memref<2xf32>, %lens: memref<2xi32>, %out: memref<2x4x8xf32>, %part: memref<2x2x3x2x10xf32>) {
  %qt = bufferization.to_tensor %q restrict : memref<2x4x8xf32> to tensor<2x4x8xf32>
  %kct = bufferization.to_tensor %kc restrict : memref<2x2x20x8xi8> to tensor<2x2x20x8xi8>
  %kst = bufferization.to_tensor %ks restrict : memref<2xf32> to tensor<2xf32>
  %vct = bufferization.to_tensor %vc restrict : memref<2x2x20x8xi8> to tensor<2x2x20x8xi8>
  %vst = bufferization.to_tensor %vs restrict : memref<2xf32> to tensor<2xf32>
  %lt = bufferization.to_tensor %lens restrict : memref<2xi32> to tensor<2xi32>
  %o, %p = lowbit.kv_decode_attention %qt, %kct, %kst, %vct, %vst, %lt {format = #lowbit.float<"e4m3">, scale = "per_head", softmax_scale = 0.5 : f32, split_tokens = 8}
    : tensor<2x4x8xf32>, tensor<2x2x20x8xi8>, tensor<2xf32>, tensor<2x2x20x8xi8>, tensor<2xf32>, tensor<2xi32> -> tensor<2x4x8xf32>, tensor<2x2x3x2x10xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x4x8xf32>, memref<2x4x8xf32>) -> ()
  bufferization.materialize_in_destination %p in restrict writable %part : (tensor<2x2x3x2x10xf32>, memref<2x2x3x2x10xf32>) -> ()
  return
}

// -----

// int8 groups, paged, reshaped 2-D parameters: the loads index the
// parameters, the views are erased.
// CHECK-LABEL: func.func @int8_paged
// CHECK-NOT: memref.expand_shape
// CHECK-NOT: memref.collapse_shape
// CHECK: memref.load %arg6[%{{.*}}, %{{.*}}] : memref<2x?xi32>
// CHECK: memref.load %arg1[%{{.*}}, %{{.*}}] : memref<?x64xi8>
// CHECK: arith.sitofp
// CHECK: memref.load %arg2[%{{.*}}, %{{.*}}] : memref<?x2xf32>
// CHECK: arith.divf
func.func @int8_paged(%q2: memref<8x64xf32>, %kc2: memref<?x64xi8>,
    %ks2: memref<?x2xf32>, %vc2: memref<?x64xi8>, %vs2: memref<?x2xf32>,
    %lens2: memref<1x2xi32>, %table: memref<2x?xi32>, %out2: memref<8x64xf32>,
    %part2: memref<?x66xf32>, %pages: index, %splits: index) {
  %q = memref.expand_shape %q2 [[0, 1], [2]] output_shape [2, 4, 64] : memref<8x64xf32> into memref<2x4x64xf32>
  %kc = memref.expand_shape %kc2 [[0, 1, 2], [3]] output_shape [%pages, 2, 16, 64] : memref<?x64xi8> into memref<?x2x16x64xi8>
  %ks = memref.expand_shape %ks2 [[0, 1, 2], [3]] output_shape [%pages, 2, 16, 2] : memref<?x2xf32> into memref<?x2x16x2xf32>
  %vc = memref.expand_shape %vc2 [[0, 1, 2], [3]] output_shape [%pages, 2, 16, 64] : memref<?x64xi8> into memref<?x2x16x64xi8>
  %vs = memref.expand_shape %vs2 [[0, 1, 2], [3]] output_shape [%pages, 2, 16, 2] : memref<?x2xf32> into memref<?x2x16x2xf32>
  %lens = memref.collapse_shape %lens2 [[0, 1]] : memref<1x2xi32> into memref<2xi32>
  %out = memref.expand_shape %out2 [[0, 1], [2]] output_shape [2, 4, 64] : memref<8x64xf32> into memref<2x4x64xf32>
  %part = memref.expand_shape %part2 [[0, 1, 2, 3], [4]] output_shape [2, 2, %splits, 2, 66] : memref<?x66xf32> into memref<2x2x?x2x66xf32>
  %qt = bufferization.to_tensor %q restrict : memref<2x4x64xf32> to tensor<2x4x64xf32>
  %kct = bufferization.to_tensor %kc restrict : memref<?x2x16x64xi8> to tensor<?x2x16x64xi8>
  %kst = bufferization.to_tensor %ks restrict : memref<?x2x16x2xf32> to tensor<?x2x16x2xf32>
  %vct = bufferization.to_tensor %vc restrict : memref<?x2x16x64xi8> to tensor<?x2x16x64xi8>
  %vst = bufferization.to_tensor %vs restrict : memref<?x2x16x2xf32> to tensor<?x2x16x2xf32>
  %lt = bufferization.to_tensor %lens restrict : memref<2xi32> to tensor<2xi32>
  %tt = bufferization.to_tensor %table restrict : memref<2x?xi32> to tensor<2x?xi32>
  %o, %p = lowbit.kv_decode_attention %qt, %kct, %kst, %vct, %vst, %lt block_table(%tt : tensor<2x?xi32>)
      {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32, softmax_scale = 0.125 : f32, split_tokens = 64}
      : tensor<2x4x64xf32>, tensor<?x2x16x64xi8>, tensor<?x2x16x2xf32>, tensor<?x2x16x64xi8>, tensor<?x2x16x2xf32>, tensor<2xi32>
      -> tensor<2x4x64xf32>, tensor<2x2x?x2x66xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x4x64xf32>, memref<2x4x64xf32>) -> ()
  bufferization.materialize_in_destination %p in restrict writable %part : (tensor<2x2x?x2x66xf32>, memref<2x2x?x2x66xf32>) -> ()
  return
}

// -----

// Results must be written into destinations the caller sized.
func.func @unmaterialized(%q: tensor<1x1x8xf32>, %kc: tensor<1x1x4x8xi8>,
    %s: tensor<1xf32>, %lens: tensor<1xi32>) -> tensor<1x1x8xf32> {
  // expected-error @+1 {{lowers only with each result written by one bufferization.materialize_in_destination into a memref}}
  %o, %p = lowbit.kv_decode_attention %q, %kc, %s, %kc, %s, %lens
      {format = #lowbit.float<"e5m2">, scale = "per_tensor", softmax_scale = 1.0 : f32, split_tokens = 4}
      : tensor<1x1x8xf32>, tensor<1x1x4x8xi8>, tensor<1xf32>, tensor<1x1x4x8xi8>, tensor<1xf32>, tensor<1xi32>
      -> tensor<1x1x8xf32>, tensor<1x1x1x1x10xf32>
  return %o : tensor<1x1x8xf32>
}
