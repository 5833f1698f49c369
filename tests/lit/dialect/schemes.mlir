// RUN: lowbit-opt %s -split-input-file | FileCheck %s
// RUN: lowbit-opt %s -split-input-file | lowbit-opt -split-input-file | FileCheck %s

// Every named scheme round-trips by name.
// CHECK-LABEL: @named
// CHECK-SAME: fp8_e4m3 = #lowbit.scheme<"fp8_e4m3">
// CHECK-SAME: fp8_e5m2 = #lowbit.scheme<"fp8_e5m2">
// CHECK-SAME: int4_g128 = #lowbit.scheme<"int4_g128">
// CHECK-SAME: int8 = #lowbit.scheme<"int8">
// CHECK-SAME: int8_g64 = #lowbit.scheme<"int8_g64">
// CHECK-SAME: mxfp4 = #lowbit.scheme<"mxfp4">
// CHECK-SAME: mxfp6_e2m3 = #lowbit.scheme<"mxfp6_e2m3">
// CHECK-SAME: mxfp6_e3m2 = #lowbit.scheme<"mxfp6_e3m2">
// CHECK-SAME: mxfp8 = #lowbit.scheme<"mxfp8">
// CHECK-SAME: nvfp4 = #lowbit.scheme<"nvfp4">
func.func private @named() attributes {
  fp8_e4m3 = #lowbit.scheme<"fp8_e4m3">,
  fp8_e5m2 = #lowbit.scheme<"fp8_e5m2">,
  mxfp8 = #lowbit.scheme<"mxfp8">,
  mxfp6_e2m3 = #lowbit.scheme<"mxfp6_e2m3">,
  mxfp6_e3m2 = #lowbit.scheme<"mxfp6_e3m2">,
  mxfp4 = #lowbit.scheme<"mxfp4">,
  nvfp4 = #lowbit.scheme<"nvfp4">,
  int4_g128 = #lowbit.scheme<"int4_g128">,
  int8 = #lowbit.scheme<"int8">,
  int8_g64 = #lowbit.scheme<int8_g64>}

// -----

// The full form of a named scheme is the same attribute and prints as the
// name.
// CHECK-LABEL: @full_named
// CHECK-SAME: int4_g128 = #lowbit.scheme<"int4_g128">
// CHECK-SAME: mxfp4 = #lowbit.scheme<"mxfp4">
// CHECK-SAME: nvfp4 = #lowbit.scheme<"nvfp4">
func.func private @full_named() attributes {
  mxfp4 = #lowbit.scheme<format = #lowbit.float<"e2m1">,
                         scale = #lowbit.scale<group(32), tail = true,
                                               type = e8m0, rule = floor>,
                         packing = nibble>,
  nvfp4 = #lowbit.scheme<packing = nibble,
                         scale = #lowbit.scale<group(16, axis = 1),
                                               tail = true, type = ue4m3,
                                               rule = absmax, mode = dynamic,
                                               zero_point = false,
                                               global = decode,
                                               layout = row_major>,
                         format = #lowbit.float<exp = 2, man = 1, bias = 1,
                                                signed = true,
                                                specials = finite>>,
  int4_g128 = #lowbit.scheme<format = #lowbit.int<"uint4">,
                             scale = #lowbit.scale<group(128), tail = true,
                                                   type = f16, rule = minmax,
                                                   zero_point = true>,
                             packing = nibble>}

// -----

// A scheme that is not named prints in the full form.
// CHECK-LABEL: @unnamed
// CHECK-SAME: mxfp4_rceil = #lowbit.scheme<format = #lowbit.float<"e2m1">, scale = #lowbit.scale<group(32, axis = 1), tail = true, type = e8m0, rule = rceil, mode = dynamic, zero_point = false, global = none, layout = row_major>, packing = nibble>
// CHECK-SAME: nvfp4_swizzled = #lowbit.scheme<format = #lowbit.float<"e2m1">, scale = #lowbit.scale<group(16, axis = 1), tail = false, type = ue4m3, rule = absmax, mode = static, zero_point = false, global = encode, layout = swizzle_128x4>, packing = nibble>
// CHECK-SAME: research = #lowbit.scheme<format = #lowbit.float<exp = 3, man = 4, bias = 3, signed = true, specials = finite>, scale = #lowbit.scale<block(1x8), tail = false, type = bf16, rule = absmax, mode = dynamic, zero_point = false, global = none, layout = row_major>, packing = byte>
// CHECK-SAME: w4_per_channel = #lowbit.scheme<format = #lowbit.int<"int4">, scale = #lowbit.scale<per_channel(axis = 0), tail = false, type = f32, rule = absmax, mode = static, zero_point = false, global = none, layout = row_major>, packing = nibble>
func.func private @unnamed() attributes {
  mxfp4_rceil = #lowbit.scheme<format = #lowbit.float<"e2m1">,
      scale = #lowbit.scale<group(32), tail = true, type = e8m0,
                            rule = rceil>,
      packing = nibble>,
  nvfp4_swizzled = #lowbit.scheme<format = #lowbit.float<"e2m1">,
      scale = #lowbit.scale<group(16), type = ue4m3, mode = static,
                            global = encode, layout = swizzle_128x4>,
      packing = nibble>,
  research = #lowbit.scheme<format = #lowbit.float<"e3m4">,
      scale = #lowbit.scale<block(1x8), type = bf16>, packing = byte>,
  w4_per_channel = #lowbit.scheme<format = #lowbit.int<"int4">,
      scale = #lowbit.scale<per_channel(axis = 0), mode = static>,
      packing = nibble>}
