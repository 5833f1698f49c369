// RUN: lowbit-opt %s --lowbit-fusion-to-loops | FileCheck %s --check-prefix=FUSION
// RUN: lowbit-opt %s --lowbit-fusion-to-loops --lowbit-to-loops | FileCheck %s --check-prefix=LOOPS

// SmoothQuant in front of MXFP4, as `lowbit compile "smooth | quantize
// mxfp4" --emit mlir` builds it. lowbit-fusion-to-loops inlines the region
// and lowers the prologue to loops; the quantize stays and reads the
// prologue's buffer through a to_tensor.
// FUSION-LABEL: func.func @kernel
// FUSION-NOT: lowbit.fused
// FUSION-NOT: linalg.
// FUSION-NOT: affine.
// FUSION: %[[TMP:.*]] = memref.alloc
// FUSION: scf.parallel
// FUSION: arith.divf
// FUSION: %[[IN:.*]] = bufferization.to_tensor %[[TMP]]
// FUSION: lowbit.quantize %[[IN]]
// FUSION: memref.dealloc %[[TMP]]
// FUSION-NEXT: return

// Then one kernel function: the prologue's nest, the quantize's nest.
// LOOPS-COUNT-1: func.func
// LOOPS-NOT: lowbit.quantize
// LOOPS: arith.divf
// LOOPS: lowbit.encode
// LOOPS: memref.dealloc
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (0, d1)>
func.func @kernel(%arg0: memref<?x?xf32>, %arg1: memref<1x?xf32>,
                  %arg2: memref<?x?xi8>, %arg3: memref<?x?xi8>) {
  %0 = bufferization.to_tensor %arg1 restrict : memref<1x?xf32> to tensor<1x?xf32>
  %1 = bufferization.to_tensor %arg0 restrict : memref<?x?xf32> to tensor<?x?xf32>
  %2:2 = lowbit.fused ins(%1, %0 : tensor<?x?xf32>, tensor<1x?xf32>)
      -> tensor<?x?xi8>, tensor<?x?xi8> {
  ^bb0(%arg4: tensor<?x?xf32>, %arg5: tensor<1x?xf32>):
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg4, %c0 : tensor<?x?xf32>
    %c1 = arith.constant 1 : index
    %dim_0 = tensor.dim %arg4, %c1 : tensor<?x?xf32>
    %3 = tensor.empty(%dim, %dim_0) : tensor<?x?xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map],
                         iterator_types = ["parallel", "parallel"]}
        ins(%arg4, %arg5 : tensor<?x?xf32>, tensor<1x?xf32>)
        outs(%3 : tensor<?x?xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %5 = arith.divf %in, %in_1 : f32
      linalg.yield %5 : f32
    } -> tensor<?x?xf32>
    %codes, %scales = lowbit.quantize %4 {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
    lowbit.yield %codes, %scales : tensor<?x?xi8>, tensor<?x?xi8>
  }
  bufferization.materialize_in_destination %2#0 in restrict writable %arg2
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %2#1 in restrict writable %arg3
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}
