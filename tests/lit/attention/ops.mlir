// RUN: lowbit-opt %s | lowbit-opt | FileCheck %s

// lowbit.kv_decode_attention round-trips: int8 groups contiguous, FP8 per
// head paged, dynamic sizes.

// CHECK-LABEL: func.func @int8_contiguous
// CHECK: lowbit.kv_decode_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {convention = "divisor", format = #lowbit.int<"int8">, group_size = 32 : i64, scale = "per_group", softmax_scale = 1.250000e-01 : f32, split_tokens = 128 : i64}
// CHECK-SAME: -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
func.func @int8_contiguous(%q: tensor<2x8x64xf16>, %kc: tensor<2x2x300x64xi8>,
    %ks: tensor<2x2x300x2xf32>, %vc: tensor<2x2x300x64xi8>,
    %vs: tensor<2x2x300x2xf32>, %lens: tensor<2xi32>)
    -> (tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>) {
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens
      {format = #lowbit.int<"int8">, scale = "per_group", group_size = 32,
       convention = "divisor", softmax_scale = 0.125 : f32,
       split_tokens = 128}
      : tensor<2x8x64xf16>, tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>,
        tensor<2x2x300x64xi8>, tensor<2x2x300x2xf32>, tensor<2xi32>
      -> tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
  return %out, %partials : tensor<2x8x64xf32>, tensor<2x2x3x4x66xf32>
}

// CHECK-LABEL: func.func @fp8_paged
// CHECK: lowbit.kv_decode_attention %{{.*}} block_table(%{{.*}} : tensor<3x4xi32>) {format = #lowbit.float<"e4m3">, scale = "per_head"
func.func @fp8_paged(%q: tensor<3x4x128xbf16>, %kc: tensor<10x4x16x128xi8>,
    %ks: tensor<4xf32>, %vc: tensor<10x4x16x128xi8>, %vs: tensor<4xf32>,
    %lens: tensor<3xi32>, %table: tensor<3x4xi32>)
    -> (tensor<3x4x128xf32>, tensor<3x4x1x1x130xf32>) {
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens
      block_table(%table : tensor<3x4xi32>)
      {format = #lowbit.float<"e4m3">, scale = "per_head",
       softmax_scale = 0.088 : f32, split_tokens = 64}
      : tensor<3x4x128xbf16>, tensor<10x4x16x128xi8>, tensor<4xf32>,
        tensor<10x4x16x128xi8>, tensor<4xf32>, tensor<3xi32>
      -> tensor<3x4x128xf32>, tensor<3x4x1x1x130xf32>
  return %out, %partials : tensor<3x4x128xf32>, tensor<3x4x1x1x130xf32>
}

// CHECK-LABEL: func.func @dynamic
// CHECK: lowbit.kv_decode_attention {{.*}} -> tensor<?x32x128xf32>, tensor<?x8x?x4x130xf32>
func.func @dynamic(%q: tensor<?x32x128xf32>, %kc: tensor<?x8x?x128xi8>,
    %ks: tensor<1xf32>, %vc: tensor<?x8x?x128xi8>, %vs: tensor<1xf32>,
    %lens: tensor<?xi32>) -> (tensor<?x32x128xf32>, tensor<?x8x?x4x130xf32>) {
  %out, %partials = lowbit.kv_decode_attention %q, %kc, %ks, %vc, %vs, %lens
      {format = #lowbit.float<"e5m2">, scale = "per_tensor",
       softmax_scale = 0.088 : f32, split_tokens = 256}
      : tensor<?x32x128xf32>, tensor<?x8x?x128xi8>, tensor<1xf32>,
        tensor<?x8x?x128xi8>, tensor<1xf32>, tensor<?xi32>
      -> tensor<?x32x128xf32>, tensor<?x8x?x4x130xf32>
  return %out, %partials : tensor<?x32x128xf32>, tensor<?x8x?x4x130xf32>
}
