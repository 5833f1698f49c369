// RUN: lowbit-opt %s -split-input-file | FileCheck %s
// RUN: lowbit-opt %s -split-input-file | lowbit-opt -split-input-file | FileCheck %s
// RUN: lowbit-opt %s -split-input-file -mlir-print-op-generic | lowbit-opt -split-input-file | FileCheck %s

// SmoothQuant in front of MXFP4: one kernel, the divided tensor stays
// inside the region.
// CHECK-LABEL: @smooth_mxfp4
// CHECK: %{{.*}}:2 = lowbit.fused ins(%{{.*}}, %{{.*}} : tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x32xi8>, tensor<4x2xi8> {
// CHECK: ^bb0(%{{.*}}: tensor<4x64xf32>, %{{.*}}: tensor<64xf32>):
// CHECK: linalg.generic
// CHECK: arith.divf
// CHECK: lowbit.quantize
// CHECK: lowbit.yield %{{.*}}, %{{.*}} : tensor<4x32xi8>, tensor<4x2xi8>
#row = affine_map<(r, c) -> (r, c)>
#col = affine_map<(r, c) -> (c)>
func.func @smooth_mxfp4(%x: tensor<4x64xf32>, %s: tensor<64xf32>)
    -> (tensor<4x32xi8>, tensor<4x2xi8>) {
  %codes, %scales = lowbit.fused ins(%x, %s : tensor<4x64xf32>, tensor<64xf32>)
      -> tensor<4x32xi8>, tensor<4x2xi8> {
  ^bb0(%in: tensor<4x64xf32>, %smooth: tensor<64xf32>):
    %init = tensor.empty() : tensor<4x64xf32>
    %y = linalg.generic {indexing_maps = [#row, #col, #row],
                         iterator_types = ["parallel", "parallel"]}
        ins(%in, %smooth : tensor<4x64xf32>, tensor<64xf32>)
        outs(%init : tensor<4x64xf32>) {
    ^bb0(%v: f32, %d: f32, %o: f32):
      %q = arith.divf %v, %d : f32
      linalg.yield %q : f32
    } -> tensor<4x64xf32>
    %c, %sc = lowbit.quantize %y {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
    lowbit.yield %c, %sc : tensor<4x32xi8>, tensor<4x2xi8>
  }
  return %codes, %scales : tensor<4x32xi8>, tensor<4x2xi8>
}

// -----

// Residual add + RMSNorm + static FP8: the updated residual is a declared
// side output, so it may leave the kernel.
// CHECK-LABEL: @add_rmsnorm_fp8
// CHECK: lowbit.fused ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x128xbf16>, tensor<8x128xbf16>, tensor<128xbf16>, tensor<1x1xf32>) attributes {side_outputs = 1 : i64} -> tensor<8x128xi8>, tensor<8x128xbf16>
// CHECK: linalg.reduce
// CHECK: math.sqrt
// CHECK: lowbit.yield %{{.*}}, %{{.*}} : tensor<8x128xi8>, tensor<8x128xbf16>
#map2 = affine_map<(r, c) -> (r, c)>
#rowv = affine_map<(r, c) -> (r)>
#colv = affine_map<(r, c) -> (c)>
func.func @add_rmsnorm_fp8(%x: tensor<8x128xbf16>, %r: tensor<8x128xbf16>,
                           %w: tensor<128xbf16>, %scale: tensor<1x1xf32>)
    -> (tensor<8x128xi8>, tensor<8x128xbf16>) {
  %codes, %res = lowbit.fused ins(%x, %r, %w, %scale : tensor<8x128xbf16>,
      tensor<8x128xbf16>, tensor<128xbf16>, tensor<1x1xf32>)
      attributes {side_outputs = 1 : i64} -> tensor<8x128xi8>, tensor<8x128xbf16> {
  ^bb0(%in: tensor<8x128xbf16>, %resid: tensor<8x128xbf16>,
       %weight: tensor<128xbf16>, %s: tensor<1x1xf32>):
    %e = tensor.empty() : tensor<8x128xbf16>
    %h = linalg.add ins(%in, %resid : tensor<8x128xbf16>, tensor<8x128xbf16>)
        outs(%e : tensor<8x128xbf16>) -> tensor<8x128xbf16>
    %zero = arith.constant 0.0 : f32
    %acc0 = tensor.empty() : tensor<8xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<8xf32>) -> tensor<8xf32>
    %ss = linalg.reduce ins(%h : tensor<8x128xbf16>) outs(%acc : tensor<8xf32>)
        dimensions = [1]
      (%v: bf16, %a: f32) {
        %w32 = arith.extf %v : bf16 to f32
        %sq = arith.mulf %w32, %w32 : f32
        %sum = arith.addf %a, %sq : f32
        linalg.yield %sum : f32
      }
    %f0 = tensor.empty() : tensor<8x128xf32>
    %y = linalg.generic {indexing_maps = [#map2, #rowv, #colv, #map2],
                         iterator_types = ["parallel", "parallel"]}
        ins(%h, %ss, %weight : tensor<8x128xbf16>, tensor<8xf32>, tensor<128xbf16>)
        outs(%f0 : tensor<8x128xf32>) {
    ^bb0(%v: bf16, %sum: f32, %wt: bf16, %o: f32):
      %n = arith.constant 128.0 : f32
      %eps = arith.constant 1.0e-06 : f32
      %one = arith.constant 1.0 : f32
      %ms = arith.divf %sum, %n : f32
      %me = arith.addf %ms, %eps : f32
      %rt = math.sqrt %me : f32
      %inv = arith.divf %one, %rt : f32
      %v32 = arith.extf %v : bf16 to f32
      %w32 = arith.extf %wt : bf16 to f32
      %a = arith.mulf %v32, %inv : f32
      %b = arith.mulf %a, %w32 : f32
      linalg.yield %b : f32
    } -> tensor<8x128xf32>
    %c = lowbit.quantize %y scales(%s : tensor<1x1xf32>)
        {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
                    scale = #lowbit.scale<per_tensor, mode = static>,
                    packing = byte>}
        : tensor<8x128xf32> -> tensor<8x128xi8>
    lowbit.yield %c, %h : tensor<8x128xi8>, tensor<8x128xbf16>
  }
  return %codes, %res : tensor<8x128xi8>, tensor<8x128xbf16>
}
