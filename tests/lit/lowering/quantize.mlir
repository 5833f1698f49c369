// RUN: lowbit-opt --lowbit-to-loops --canonicalize %s | FileCheck %s
//
// Kernels in the ABI form (docs/kernel-abi.md): memref parameters, inputs
// wrapped with to_tensor, results materialized into their parameters. The
// pass writes straight into the parameters and leaves no bufferization op.

// CHECK-LABEL: func.func @mxfp4
// CHECK-NOT: bufferization.
// One scf.parallel over (rows x groups of 32); each group reduces, picks its
// e8m0 scale by FLOOR (the f32 exponent: ctlz for subnormals), stores it and
// converts its own bytes: one pass over the input.
// CHECK: scf.parallel (%[[UR:.*]], %[[UC:.*]]) =
// CHECK: scf.for
// CHECK: scf.for
// CHECK: math.absf
// CHECK: math.ctlz
// CHECK: memref.store %{{.*}}, %arg1[%[[UR]], %[[UC]]] : memref<?x?xi8>
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e8m0">} : i8 to f32
// CHECK: scf.for
// CHECK: scf.for
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e2m1">} : f32 to i8
// Element 0 in the low nibble, element 1 shifted up by 4.
// CHECK: arith.andi %{{.*}}, %c15_i8
// CHECK: scf.if
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e2m1">} : f32 to i8
// CHECK: arith.shli %{{.*}}, %c4_i8
// CHECK: arith.ori
// CHECK: memref.store %{{.*}}, %arg2
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @mxfp4(%in: memref<?x?xf32>, %scales: memref<?x?xi8>,
                 %codes: memref<?x?xi8>) {
  %x = bufferization.to_tensor %in restrict : memref<?x?xf32> to tensor<?x?xf32>
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}

// A dynamic per-tensor scale needs the whole tensor's amax first: an
// scf.parallel over rows combined by scf.reduce, then a second nest that
// converts (two passes over the input). Inputs are widened exactly.
// CHECK-LABEL: func.func @fp8_per_tensor
// CHECK: %[[AMAX:.*]] = scf.parallel
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: scf.reduce(%{{.*}} : f32)
// CHECK: arith.cmpf olt
// CHECK: scf.reduce.return
// CHECK: arith.divf %[[AMAX]], %{{.*}} : f32
// CHECK: memref.store %{{.*}}, %arg2[%c0, %c0] : memref<1x1xf32>
// CHECK: scf.parallel
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e4m3">} : f32 to i8
func.func @fp8_per_tensor(%in: memref<?x?xbf16>, %codes: memref<?x?xi8>,
                          %scale: memref<1x1xf32>) {
  %x = bufferization.to_tensor %in restrict : memref<?x?xbf16> to tensor<?x?xbf16>
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"fp8_e4m3">}
      : tensor<?x?xbf16> -> tensor<?x?xi8> scales tensor<1x1xf32>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scale
      : (tensor<1x1xf32>, memref<1x1xf32>) -> ()
  return
}

// NVFP4 with a computed global scale: the tensor amax (scf.reduce), then
// ue4m3 block scales and e2m1 nibbles.
// CHECK-LABEL: func.func @nvfp4
// CHECK: scf.parallel
// CHECK: scf.reduce
// CHECK: memref.store %{{.*}}, %arg3[%c0, %c0] : memref<1x1xf32>
// CHECK: scf.parallel
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"ue4m3">} : f32 to i8
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e2m1">} : f32 to i8
func.func @nvfp4(%in: memref<?x?xf16>, %codes: memref<?x?xi8>,
                 %scales: memref<?x?xi8>, %global: memref<1x1xf32>) {
  %x = bufferization.to_tensor %in restrict : memref<?x?xf16> to tensor<?x?xf16>
  %c, %s, %g = lowbit.quantize %x {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<?x?xf16> -> tensor<?x?xi8> scales tensor<?x?xi8>
        global tensor<1x1xf32>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %g in restrict writable %global
      : (tensor<1x1xf32>, memref<1x1xf32>) -> ()
  return
}

// RCEIL is e8m0 rounding toward +inf of amax / max.
// CHECK-LABEL: func.func @mxfp8_rceil
// CHECK-NOT: math.ctlz
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e8m0">, rounding = "rp"} : f32 to i8
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e4m3">} : f32 to i8
func.func @mxfp8_rceil(%in: memref<?x?xf32>, %codes: memref<?x?xi8>,
                       %scales: memref<?x?xi8>) {
  %x = bufferization.to_tensor %in restrict : memref<?x?xf32> to tensor<?x?xf32>
  %c, %s = lowbit.quantize %x
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<group(32), tail = true, type = e8m0,
                                rule = rceil>, packing = byte>}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}

// int4_g128: min/max statistics, a saturating f16 scale (lowbit.encode, not
// arith.truncf), a zero point rounded to nearest even.
// CHECK-LABEL: func.func @int4_g128
// CHECK: scf.parallel
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"f16">} : f32 to i16
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK: math.roundeven
// CHECK: arith.fptoui %{{.*}} : f32 to i8
// CHECK: memref.store %{{.*}}, %arg3
// CHECK-NOT: arith.truncf
func.func @int4_g128(%in: memref<?x?xf16>, %codes: memref<?x?xi8>,
                     %scales: memref<?x?xf16>, %zeros: memref<?x?xi8>) {
  %x = bufferization.to_tensor %in restrict : memref<?x?xf16> to tensor<?x?xf16>
  %c, %s, %z = lowbit.quantize %x {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<?x?xf16> -> tensor<?x?xi8> scales tensor<?x?xf16>
        zeros tensor<?x?xi8>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<?x?xf16>, memref<?x?xf16>) -> ()
  bufferization.materialize_in_destination %z in restrict writable %zeros
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}

// Nibble codes of groups along axis 0 share bytes between groups: the
// scales come first, then a second nest over rows x bytes reads them back.
// CHECK-LABEL: func.func @nibble_axis0
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %arg2
// CHECK: scf.parallel
// CHECK: memref.load %arg2
// CHECK: lowbit.encode
func.func @nibble_axis0(%in: memref<?x?xf32>, %codes: memref<?x?xi8>,
                        %scales: memref<?x?xi8>) {
  %x = bufferization.to_tensor %in restrict : memref<?x?xf32> to tensor<?x?xf32>
  %c, %s = lowbit.quantize %x
      {scheme = #lowbit.scheme<format = #lowbit.float<"e2m1">,
          scale = #lowbit.scale<group(32, axis = 0), tail = true, type = e8m0,
                                rule = floor>, packing = nibble>}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}

// A result that is not materialized gets its own buffer.
// CHECK-LABEL: func.func @returns_tensors
// CHECK: %[[CODES:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xi8>
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[CODES]] restrict writable
// CHECK: return %[[T]]
func.func @returns_tensors(%x: tensor<?x?xf32>) -> tensor<?x?xi8> {
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  return %c : tensor<?x?xi8>
}
