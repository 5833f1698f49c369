// RUN: lowbit-opt %s -split-input-file | lowbit-opt -split-input-file | FileCheck %s --check-prefix=ROUND
// RUN: lowbit-opt %s -split-input-file --lowbit-flatten-leading-dims | FileCheck %s
// RUN: lowbit-opt %s -split-input-file --lowbit-flatten-leading-dims --lowbit-to-loops --canonicalize | FileCheck %s --check-prefix=LOOPS
//
// N-D tensors (docs/quantization.md): a [2, 3, 8] tensor in int8 groups of
// 4 along the last axis is the model's [6, 8]; codes keep the shape
// [2, 3, 8], the scales (one row per input row) are [2, 3, 2].
// lowbit-flatten-leading-dims makes the ops 2-D so the lowerings apply.

// ROUND-LABEL: @int8_g4_nd
// ROUND: lowbit.quantize %{{.*}} : tensor<2x3x8xf32> -> tensor<2x3x8xi8> scales tensor<2x3x2xf32>
// ROUND: lowbit.dequantize %{{.*}} scales(%{{.*}} : tensor<2x3x2xf32>) {{.*}} : tensor<2x3x8xi8> -> tensor<2x3x8xf32>
// CHECK-LABEL: @int8_g4_nd
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
// CHECK: %[[C:.*]], %[[S:.*]] = lowbit.quantize %[[X]] {{.*}} : tensor<6x8xf32> -> tensor<6x8xi8> scales tensor<6x2xf32>
// CHECK: %[[CN:.*]] = tensor.expand_shape %[[C]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xi8> into tensor<2x3x8xi8>
// CHECK: %[[SN:.*]] = tensor.expand_shape %[[S]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 2] : tensor<6x2xf32> into tensor<2x3x2xf32>
// CHECK: %[[C2:.*]] = tensor.collapse_shape %[[CN]] {{.*}} into tensor<6x8xi8>
// CHECK: %[[S2:.*]] = tensor.collapse_shape %[[SN]] {{.*}} into tensor<6x2xf32>
// CHECK: %[[Y:.*]] = lowbit.dequantize %[[C2]] scales(%[[S2]] : tensor<6x2xf32>) {{.*}} : tensor<6x8xi8> -> tensor<6x8xf32>
// CHECK: tensor.expand_shape %[[Y]] {{.*}} : tensor<6x8xf32> into tensor<2x3x8xf32>
func.func @int8_g4_nd(%x: tensor<2x3x8xf32>)
    -> (tensor<2x3x8xi8>, tensor<2x3x2xf32>, tensor<2x3x8xf32>) {
  %codes, %scales = lowbit.quantize %x {scheme = #lowbit.scheme<format = #lowbit.int<"int8">, scale = #lowbit.scale<group(4), type = f32>, packing = byte>}
      : tensor<2x3x8xf32> -> tensor<2x3x8xi8> scales tensor<2x3x2xf32>
  %y = lowbit.dequantize %codes scales(%scales : tensor<2x3x2xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.int<"int8">, scale = #lowbit.scale<group(4), type = f32>, packing = byte>} : tensor<2x3x8xi8> -> tensor<2x3x8xf32>
  return %codes, %scales, %y
      : tensor<2x3x8xi8>, tensor<2x3x2xf32>, tensor<2x3x8xf32>
}

// -----

// The kernel ABI form, 4-D and dynamic: the parameters are read and written
// in place through 2-D views (memref.collapse_shape), no tensor op is left,
// and lowbit-to-loops lowers the 2-D op as it lowers any other.
// CHECK-LABEL: @kernel_4d
// CHECK: %[[IN:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1, 2], [3]] : memref<?x3x?x8xf32> into memref<?x8xf32>
// CHECK: bufferization.to_tensor %[[IN]]
// CHECK: memref.collapse_shape %arg1 {{.*}} : memref<?x3x?x8xi8> into memref<?x8xi8>
// CHECK: memref.collapse_shape %arg2 {{.*}} : memref<?x3x?x2xf32> into memref<?x2xf32>
// CHECK: lowbit.quantize {{.*}} : tensor<?x8xf32> -> tensor<?x8xi8> scales tensor<?x2xf32>
// CHECK-NOT: tensor.
// CHECK: return
// LOOPS-LABEL: @kernel_4d
// LOOPS-NOT: bufferization.
// LOOPS-NOT: tensor.
// LOOPS: scf.parallel
// LOOPS: memref.store %{{.*}}, %collapse_shape{{.*}} : memref<?x2xf32>
// LOOPS: lowbit.encode {{.*}} : f32 to i8
// LOOPS: memref.store %{{.*}}, %collapse_shape{{.*}} : memref<?x8xi8>
// LOOPS: return
func.func @kernel_4d(%in: memref<?x3x?x8xf32>, %codes: memref<?x3x?x8xi8>,
                     %scales: memref<?x3x?x2xf32>) {
  %x = bufferization.to_tensor %in restrict : memref<?x3x?x8xf32> to tensor<?x3x?x8xf32>
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<format = #lowbit.int<"int8">, scale = #lowbit.scale<group(4), type = f32>, packing = byte>}
      : tensor<?x3x?x8xf32> -> tensor<?x3x?x8xi8> scales tensor<?x3x?x2xf32>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x3x?x8xi8>, memref<?x3x?x8xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<?x3x?x2xf32>, memref<?x3x?x2xf32>) -> ()
  return
}

// -----

// Scales whose rows do not follow the input's (per tensor here) keep the
// model's 2-D shape; 2-D ops are left as they are.
// CHECK-LABEL: @per_tensor_nd
// CHECK: lowbit.quantize %{{.*}} : tensor<12x16xbf16> -> tensor<12x16xi8> scales tensor<1x1xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [4, 3, 16] : tensor<12x16xi8> into tensor<4x3x16xi8>
// CHECK-LABEL: @two_d
// CHECK-NOT: tensor.
// CHECK: lowbit.quantize %arg0 {{.*}} : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
func.func @per_tensor_nd(%x: tensor<4x3x16xbf16>)
    -> (tensor<4x3x16xi8>, tensor<1x1xf32>) {
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"fp8_e4m3">}
      : tensor<4x3x16xbf16> -> tensor<4x3x16xi8> scales tensor<1x1xf32>
  return %c, %s : tensor<4x3x16xi8>, tensor<1x1xf32>
}
func.func @two_d(%x: tensor<4x64xf32>) -> (tensor<4x32xi8>, tensor<4x2xi8>) {
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
  return %c, %s : tensor<4x32xi8>, tensor<4x2xi8>
}
