// lowbit-to-gpu: the ops it covers become one gpu.launch with the explicit
// thread mapping (docs/gpu.md, Thread mapping); the rest stay for
// lowbit-to-loops.
//
// RUN: lowbit-opt --lowbit-to-gpu %s | FileCheck %s

// Groups of 32 along the row, f32 input: 8 lanes per group, each loading
// 16 bytes; a 3-step xor shuffle; the scale stored by lane 0; one vector
// encode per pair; nibble bytes stored as one vector.
// CHECK-LABEL: func.func @mxfp4
// CHECK: gpu.launch
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: gpu.shuffle  xor
// CHECK: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<?x?xi8>
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e2m1">} : vector<2xf32> to vector<2xi8>
// CHECK: vector.store %{{.*}} {alignment = 2 : i64} : memref<?x?xi8>, vector<2xi8>
// CHECK-NOT: lowbit.quantize
func.func @mxfp4(%in: memref<?x?xf32>, %codes: memref<?x?xi8>,
                 %scales: memref<?x?xi8>) {
  %x = bufferization.to_tensor %in restrict : memref<?x?xf32> to tensor<?x?xf32>
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}

// A per-tensor scale: two launches (GpuTensorReduce.cpp), the statistics
// reduced through the workspace argument appended to the function.
// CHECK-LABEL: func.func @fp8_per_tensor
// CHECK-SAME: %{{.*}}: memref<1x2xi32> {lowbit.workspace}
// CHECK: gpu.launch
// CHECK: memref.atomic_rmw maxu
// CHECK: gpu.launch
// CHECK-NOT: lowbit.quantize
// CHECK: return
func.func @fp8_per_tensor(%in: memref<?x?xbf16>, %codes: memref<?x?xi8>,
                          %scales: memref<1x1xf32>) {
  %x = bufferization.to_tensor %in restrict : memref<?x?xbf16> to tensor<?x?xbf16>
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"fp8_e4m3">}
      : tensor<?x?xbf16> -> tensor<?x?xi8> scales tensor<1x1xf32>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<1x1xf32>, memref<1x1xf32>) -> ()
  return
}

// Dequantize: 16 code bytes per lane, exchanged by indexed shuffles,
// 16-byte stores of 8 f16 into the flat output, one decode per pair of
// codes.
// CHECK-LABEL: func.func @mxfp4_to_f16
// CHECK: gpu.launch
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x?xi8>, vector<16xi8>
// CHECK: gpu.shuffle  idx
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e2m1">} : vector<2xi8> to vector<2xf32>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// CHECK-NOT: lowbit.dequantize
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
