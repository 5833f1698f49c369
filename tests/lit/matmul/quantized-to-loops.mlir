// RUN: lowbit-opt %s -split-input-file -verify-diagnostics --lowbit-matmul-to-loops | FileCheck %s
// RUN: lowbit-opt %s -split-input-file -verify-diagnostics --lowbit-to-loops-for-cpu | FileCheck %s --check-prefix=LOOPS
//
// lowbit-matmul-to-loops on a matmul with an act_scheme (docs/matmul.md,
// "Quantized activations"): X through the activations' own lowbit.quantize
// into scratch, both sides' codes decoded to their values, their scales to
// f32 factors, then per (m, n) the K blocks: a partial sum from +0 (an f32
// fma chain, or an i32 sum converted once), s = fx * fw, acc = fma(p, s,
// acc), the bias, the rounding.

// FP8 1x128 groups of X x 128x128 blocks of W: blocks of 128 along K.
// CHECK-LABEL: func.func @fp8_blocks
// CHECK-NOT: lowbit.matmul
// CHECK: %[[XC:.*]] = memref.alloc(%{{.*}}) : memref<?x256xi8>
// CHECK: %[[XS:.*]] = memref.alloc(%{{.*}}) : memref<?x2xf32>
// CHECK: %[[CODES:.*]], %[[SCALES:.*]] = lowbit.quantize %{{.*}} {scheme = {{.*}}group(128, axis = 1){{.*}}} : tensor<?x256xbf16> -> tensor<?x256xi8> scales tensor<?x2xf32>
// CHECK: bufferization.materialize_in_destination %[[CODES]] in restrict writable %[[XC]]
// CHECK: bufferization.materialize_in_destination %[[SCALES]] in restrict writable %[[XS]]
// CHECK: %[[XV:.*]] = memref.alloc(%{{.*}}) : memref<?x256xf32>
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e4m3">} : i8 to f32
// CHECK: %[[WV:.*]] = memref.alloc() : memref<96x256xf32>
// CHECK: scf.parallel (%[[M:.*]], %[[N:.*]]) = {{.*}} to (%{{.*}}, %c96)
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %cst)
// CHECK: %[[BEGIN:.*]] = arith.muli %[[J]], %c128
// CHECK: %[[END:.*]] = arith.minui
// CHECK: %[[P:.*]] = scf.for %[[K:.*]] = %[[BEGIN]] to %[[END]] step %{{.*}} iter_args(%[[Q:.*]] = %{{.*}})
// CHECK: memref.load %[[XV]][%[[M]], %[[K]]]
// CHECK: memref.load %[[WV]][%[[N]], %[[K]]]
// CHECK: math.fma %{{.*}}, %{{.*}}, %[[Q]] : f32
// CHECK: %[[FX:.*]] = memref.load %{{.*}}[%[[M]], %{{.*}}] : memref<?x2xf32>
// CHECK: %[[FW_ROW:.*]] = arith.divui %[[N]], %c128
// CHECK: %[[FW:.*]] = memref.load %{{.*}}[%[[FW_ROW]], %{{.*}}] : memref<1x2xf32>
// CHECK: %[[S:.*]] = arith.mulf %[[FX]], %[[FW]] : f32
// CHECK: math.fma %[[P]], %[[S]], %[[ACC]] : f32
// CHECK: memref.load %{{.*}}[%[[N]]] : memref<96xf32>
// CHECK: arith.addf
// CHECK: arith.constant 0x7FFFFFFF : f32
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[M]], %[[N]]] : memref<?x96xf32>
// CHECK: memref.dealloc %[[XC]]
// LOOPS-LABEL: func.func @fp8_blocks
// LOOPS-NOT: lowbit.quantize
// LOOPS-NOT: lowbit.matmul
// LOOPS: math.fma
func.func @fp8_blocks(%x: memref<?x256xbf16>, %c: memref<96x256xi8>,
                      %s: memref<1x2xf32>, %b: memref<96xf32>,
                      %y: memref<?x96xf32>) {
  %xt = bufferization.to_tensor %x restrict : memref<?x256xbf16> to tensor<?x256xbf16>
  %ct = bufferization.to_tensor %c restrict : memref<96x256xi8> to tensor<96x256xi8>
  %st = bufferization.to_tensor %s restrict : memref<1x2xf32> to tensor<1x2xf32>
  %bt = bufferization.to_tensor %b restrict : memref<96xf32> to tensor<96xf32>
  %r = lowbit.matmul %xt, %ct scales(%st : tensor<1x2xf32>) bias(%bt : tensor<96xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<block(128x128), tail = true>, packing = byte>,
       act_scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<group(128, axis = 1), tail = true>, packing = byte>}
      : tensor<?x256xbf16>, tensor<96x256xi8> -> tensor<?x96xf32>
  bufferization.materialize_in_destination %r in restrict writable %y
      : (tensor<?x96xf32>, memref<?x96xf32>) -> ()
  return
}

// -----

// INT8 per token x per channel: one block of all of K, summed exactly in
// i32 and converted once.
// CHECK-LABEL: func.func @int8_per_token
// CHECK: lowbit.quantize {{.*}} -> tensor<?x?xi8> scales tensor<?x1xf32>
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.int<"int8">} : i8 to f32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: scf.for {{.*}} iter_args(%[[Q:.*]] = %c0_i32) -> (i32)
// CHECK: %[[PROD:.*]] = arith.muli %{{.*}}, %{{.*}} : i32
// CHECK: arith.addi %[[Q]], %[[PROD]] : i32
// CHECK: %[[P:.*]] = arith.sitofp %{{.*}} : i32 to f32
// CHECK: %[[S:.*]] = arith.mulf
// CHECK: math.fma %[[P]], %[[S]], %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @int8_per_token(%x: memref<?x?xf16>, %c: memref<?x?xi8>,
                          %s: memref<?x1xf32>, %y: memref<?x?xf16>) {
  %xt = bufferization.to_tensor %x restrict : memref<?x?xf16> to tensor<?x?xf16>
  %ct = bufferization.to_tensor %c restrict : memref<?x?xi8> to tensor<?x?xi8>
  %st = bufferization.to_tensor %s restrict : memref<?x1xf32> to tensor<?x1xf32>
  %r = lowbit.matmul %xt, %ct scales(%st : tensor<?x1xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.int<"int8">,
          scale = #lowbit.scale<per_token>, packing = byte>,
       act_scheme = #lowbit.scheme<format = #lowbit.int<"int8">,
          scale = #lowbit.scale<per_token>, packing = byte>}
      : tensor<?x?xf16>, tensor<?x?xi8> -> tensor<?x?xf16>
  bufferization.materialize_in_destination %r in restrict writable %y
      : (tensor<?x?xf16>, memref<?x?xf16>) -> ()
  return
}

// -----

// NVFP4 x NVFP4: nibbles unpacked (element 0 low), ue4m3 scales decoded
// alone (blocks of 16: acc = fma(p, sx * sw, acc)); the product of the
// two global scales multiplies acc once, after the K loop.
// CHECK-LABEL: func.func @nvfp4
// CHECK: lowbit.quantize {{.*}} -> tensor<?x32xi8> scales tensor<?x4xi8> global tensor<1x1xf32>
// CHECK: arith.shrui %{{.*}}, %{{.*}} : i8
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e2m1">} : i8 to f32
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"ue4m3">} : i8 to f32
// CHECK-NOT: arith.mulf
// CHECK: scf.for
// CHECK: math.fma
// CHECK: %[[SCALE:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: math.fma %{{.*}}, %[[SCALE]], %{{.*}} : f32
// CHECK: %[[GLOBALS:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[GLOBALS]] : f32
func.func @nvfp4(%x: memref<?x64xf32>, %c: memref<8x32xi8>,
                 %s: memref<8x4xi8>, %g: memref<1x1xf32>,
                 %y: memref<?x8xbf16>) {
  %xt = bufferization.to_tensor %x restrict : memref<?x64xf32> to tensor<?x64xf32>
  %ct = bufferization.to_tensor %c restrict : memref<8x32xi8> to tensor<8x32xi8>
  %st = bufferization.to_tensor %s restrict : memref<8x4xi8> to tensor<8x4xi8>
  %gt = bufferization.to_tensor %g restrict : memref<1x1xf32> to tensor<1x1xf32>
  %r = lowbit.matmul %xt, %ct scales(%st : tensor<8x4xi8>)
      global(%gt : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<"nvfp4">, act_scheme = #lowbit.scheme<"nvfp4">}
      : tensor<?x64xf32>, tensor<8x32xi8> -> tensor<?x8xbf16>
  bufferization.materialize_in_destination %r in restrict writable %y
      : (tensor<?x8xbf16>, memref<?x8xbf16>) -> ()
  return
}
