// RUN: lowbit-opt %s --lowbit-to-gpu --lowbit-attention-to-loops | FileCheck %s
//
// dot = "mma" (docs/decode-attention.md, "Tensor-core q.K"): pass K of the
// FlashDecoding block takes each warp's 16-token tiles through mma.sync
// m16n8k16 (row.col, f16 x f16 -> f32). A bf16 query is scaled by 2^e per
// head (the quad's max |q| by xor shuffles over 1, 2), narrowed to f16
// pairs once per block; a lane reads tokens g and g + 8 of a tile, one
// 16-byte load per chunk of 16 channels, decoded and narrowed to f16 (the
// GPU tail folds the widening and the narrowing into the f16x2 cvt); head
// 64 is 4 chunks, one per lane of the quad, so 4 k-steps per tile. Pass V
// keeps its fma loop.

// CHECK-LABEL: func.func @fp8_mma
// CHECK: gpu.launch
// CHECK: arith.maximumf
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK: arith.shrui
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: gpu.shuffle  idx
// CHECK: scf.for
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xi8>, vector<16xi8>
// CHECK-NOT: lowbit.decode
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xi8>, vector<16xi8>
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e5m2">, lowbit.any_nan_bits} : vector<16xi8> to vector<16xf32>
// CHECK-NEXT: arith.truncf %{{.*}} : vector<16xf32> to vector<16xf16>
// CHECK-COUNT-4: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: nvvm.mma.sync
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK-NOT: nvvm.mma.sync
// CHECK: math.fma
// CHECK: gpu.terminator

func.func @fp8_mma(%q2: memref<8x64xbf16>, %kc2: memref<?x64xi8>,
    %ks: memref<2xf32>, %vc2: memref<?x64xi8>, %vs: memref<2xf32>,
    %lens2: memref<1x2xi32>, %out2: memref<8x64xf32>,
    %part2: memref<?x66xf32>, %tokens: index, %splits: index) {
  %q = memref.expand_shape %q2 [[0, 1], [2]] output_shape [2, 4, 64] : memref<8x64xbf16> into memref<2x4x64xbf16>
  %kc = memref.expand_shape %kc2 [[0, 1, 2], [3]] output_shape [2, 2, %tokens, 64] : memref<?x64xi8> into memref<2x2x?x64xi8>
  %vc = memref.expand_shape %vc2 [[0, 1, 2], [3]] output_shape [2, 2, %tokens, 64] : memref<?x64xi8> into memref<2x2x?x64xi8>
  %lens = memref.collapse_shape %lens2 [[0, 1]] : memref<1x2xi32> into memref<2xi32>
  %out = memref.expand_shape %out2 [[0, 1], [2]] output_shape [2, 4, 64] : memref<8x64xf32> into memref<2x4x64xf32>
  %part = memref.expand_shape %part2 [[0, 1, 2, 3], [4]] output_shape [2, 2, %splits, 2, 66] : memref<?x66xf32> into memref<2x2x?x2x66xf32>
  %qt = bufferization.to_tensor %q restrict : memref<2x4x64xbf16> to tensor<2x4x64xbf16>
  %kct = bufferization.to_tensor %kc restrict : memref<2x2x?x64xi8> to tensor<2x2x?x64xi8>
  %kst = bufferization.to_tensor %ks restrict : memref<2xf32> to tensor<2xf32>
  %vct = bufferization.to_tensor %vc restrict : memref<2x2x?x64xi8> to tensor<2x2x?x64xi8>
  %vst = bufferization.to_tensor %vs restrict : memref<2xf32> to tensor<2xf32>
  %lt = bufferization.to_tensor %lens restrict : memref<2xi32> to tensor<2xi32>
  %o, %p = lowbit.kv_decode_attention %qt, %kct, %kst, %vct, %vst, %lt {format = #lowbit.float<"e5m2">, scale = "per_head", softmax_scale = 0.125 : f32, split_tokens = 32, dot = "mma"}
    : tensor<2x4x64xbf16>, tensor<2x2x?x64xi8>, tensor<2xf32>, tensor<2x2x?x64xi8>, tensor<2xf32>, tensor<2xi32> -> tensor<2x4x64xf32>, tensor<2x2x?x2x66xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<2x4x64xf32>, memref<2x4x64xf32>) -> ()
  bufferization.materialize_in_destination %p in restrict writable %part : (tensor<2x2x?x2x66xf32>, memref<2x2x?x2x66xf32>) -> ()
  return
}
