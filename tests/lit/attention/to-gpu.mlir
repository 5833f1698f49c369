// RUN: lowbit-opt %s --lowbit-to-gpu --lowbit-attention-to-loops | FileCheck %s
//
// lowbit-to-gpu's FlashDecoding rewrite (docs/decode-attention.md, "The GPU
// kernel"): stage 1 is one gpu.launch of 128-thread blocks with the logits,
// the warps' maxima and the slot sums in workgroup memory, one 16-byte
// load per lane and row slice (4 tokens' loads issued per trip), the lane
// tree by xor shuffles over 4, 2, 1 and the warp max over 16 .. 1; stage 2
// is a second launch of 32-thread blocks.

// CHECK-LABEL: func.func @fp8_paged
// CHECK-NOT: lowbit.kv_decode_attention
// CHECK: gpu.launch
// CHECK-SAME: threads(%{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}) in (%{{[a-z0-9]+}} = %c128, %{{[a-z0-9]+}} = %c1, %{{[a-z0-9]+}} = %c1)
// CHECK-SAME: workgroup(%{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1024xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// Pass K reads the 4 tokens of a trip before decoding the first.
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xi8>, vector<16xi8>
// CHECK-NOT: lowbit.decode
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xi8>, vector<16xi8>
// CHECK-NOT: lowbit.decode
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xi8>, vector<16xi8>
// CHECK-NOT: lowbit.decode
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xi8>, vector<16xi8>
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e4m3">, lowbit.any_nan_bits} : vector<16xi8> to vector<16xf32>
// CHECK: math.fma
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK-NEXT: arith.addf
// CHECK: gpu.barrier
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: gpu.barrier
// CHECK: math.roundeven
// CHECK: gpu.barrier
// CHECK: vector.load %arg3[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xi8>, vector<16xi8>
// CHECK: gpu.barrier
// CHECK: gpu.terminator
// Stage 2: one 32-thread block per (sequence, query head, 32 channels),
// 16 splits' partials read per trip, the chains kept by selects, one
// division.
// CHECK-NOT: scf.parallel
// CHECK: gpu.launch
// CHECK-SAME: in (%{{[a-z0-9]+}} = %c32, %{{[a-z0-9]+}} = %c1, %{{[a-z0-9]+}} = %c1)
// CHECK: arith.ceildivui
// CHECK: arith.ceildivui %{{.*}}, %c16
// CHECK: scf.for
// CHECK: arith.cmpf ogt
// CHECK: scf.for
// CHECK-COUNT-16: math.fma
// CHECK: arith.divf
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel
func.func @fp8_paged(%q2: memref<8x64xbf16>, %kc2: memref<?x64xi8>,
    %ks: memref<2xf32>, %vc2: memref<?x64xi8>, %vs: memref<2xf32>,
    %lens2: memref<1x2xi32>, %table: memref<2x?xi32>, %out2: memref<8x64xf32>,
    %part2: memref<?x66xf32>, %pages: index, %splits: index) {
  %q = memref.expand_shape %q2 [[0, 1], [2]] output_shape [2, 4, 64] : memref<8x64xbf16> into memref<2x4x64xbf16>
  %kc = memref.expand_shape %kc2 [[0, 1, 2], [3]] output_shape [%pages, 2, 16, 64] : memref<?x64xi8> into memref<?x2x16x64xi8>
  %vc = memref.expand_shape %vc2 [[0, 1, 2], [3]] output_shape [%pages, 2, 16, 64] : memref<?x64xi8> into memref<?x2x16x64xi8>
  %lens = memref.collapse_shape %lens2 [[0, 1]] : memref<1x2xi32> into memref<2xi32>
  %out = memref.expand_shape %out2 [[0, 1], [2]] output_shape [2, 4, 64] : memref<8x64xf32> into memref<2x4x64xf32>
  %part = memref.expand_shape %part2 [[0, 1, 2, 3], [4]] output_shape [2, 2, %splits, 2, 66] : memref<?x66xf32> into memref<2x2x?x2x66xf32>
  %qt = bufferization.to_tensor %q restrict : memref<2x4x64xbf16> to tensor<2x4x64xbf16>
  %kct = bufferization.to_tensor %kc restrict : memref<?x2x16x64xi8> to tensor<?x2x16x64xi8>
  %kst = bufferization.to_tensor %ks restrict : memref<2xf32> to tensor<2xf32>
  %vct = bufferization.to_tensor %vc restrict : memref<?x2x16x64xi8> to tensor<?x2x16x64xi8>
  %vst = bufferization.to_tensor %vs restrict : memref<2xf32> to tensor<2xf32>
  %lt = bufferization.to_tensor %lens restrict : memref<2xi32> to tensor<2xi32>
  %tt = bufferization.to_tensor %table restrict : memref<2x?xi32> to tensor<2x?xi32>
  %o, %p = lowbit.kv_decode_attention %qt, %kct, %kst, %vct, %vst, %lt block_table(%tt : tensor<2x?xi32>) {format = #lowbit.float<"e4m3">, scale = "per_head", softmax_scale = 0.125 : f32, split_tokens = 32}
    : tensor<2x4x64xbf16>, tensor<?x2x16x64xi8>, tensor<2xf32>, tensor<?x2x16x64xi8>, tensor<2xf32>, tensor<2xi32> -> tensor<2x4x64xf32>, tensor<2x2x?x2x66xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x4x64xf32>, memref<2x4x64xf32>) -> ()
  bufferization.materialize_in_destination %p in restrict writable %part : (tensor<2x2x?x2x66xf32>, memref<2x2x?x2x66xf32>) -> ()
  return
}
