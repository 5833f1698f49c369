// RUN: lowbit-opt %s -split-input-file | FileCheck %s
// RUN: lowbit-opt %s -split-input-file | lowbit-opt -split-input-file | FileCheck %s

// Every granularity; omitted fields take lowbit::ScaleSpec's defaults and
// the printer spells every field.
// CHECK-LABEL: @granularities
// CHECK-SAME: a_tensor = #lowbit.scale<per_tensor, tail = false, type = f32, rule = absmax, mode = dynamic, zero_point = false, global = none, layout = row_major>
// CHECK-SAME: b_channel = #lowbit.scale<per_channel(axis = 0), tail = false,
// CHECK-SAME: c_token = #lowbit.scale<per_token, tail = false,
// CHECK-SAME: d_group = #lowbit.scale<group(32, axis = 1), tail = false,
// CHECK-SAME: e_group_rows = #lowbit.scale<group(64, axis = 0), tail = false,
// CHECK-SAME: f_block = #lowbit.scale<block(128x128), tail = false,
// CHECK-SAME: g_block_spaced = #lowbit.scale<block(16x4), tail = false,
func.func private @granularities() attributes {
  a_tensor = #lowbit.scale<per_tensor>,
  b_channel = #lowbit.scale<per_channel(axis = 0)>,
  c_token = #lowbit.scale<per_token>,
  d_group = #lowbit.scale<group(32)>,
  e_group_rows = #lowbit.scale<group(64, axis = 0)>,
  f_block = #lowbit.scale<block(128x128)>,
  g_block_spaced = #lowbit.scale<block(16 x 4)>}

// -----

// Every value of every field, in any order, as keywords or strings.
// CHECK-LABEL: @fields
// CHECK-SAME: a = #lowbit.scale<group(16, axis = 1), tail = true, type = ue4m3, rule = absmax, mode = dynamic, zero_point = false, global = decode, layout = swizzle_128x4>
// CHECK-SAME: b = #lowbit.scale<group(16, axis = 1), tail = false, type = bf16, rule = absmax, mode = static, zero_point = false, global = encode, layout = row_major>
// CHECK-SAME: c = #lowbit.scale<group(128, axis = 1), tail = true, type = f16, rule = minmax, mode = dynamic, zero_point = true, global = none, layout = row_major>
// CHECK-SAME: d = #lowbit.scale<group(32, axis = 1), tail = false, type = e8m0, rule = floor, mode = dynamic, zero_point = false, global = none, layout = row_major>
// CHECK-SAME: e = #lowbit.scale<group(32, axis = 1), tail = false, type = e8m0, rule = rceil, mode = dynamic, zero_point = false, global = none, layout = row_major>
func.func private @fields() attributes {
  a = #lowbit.scale<group(16), layout = swizzle_128x4, global = decode,
                    type = ue4m3, tail = true>,
  b = #lowbit.scale<group(16, axis = 1), type = bf16, mode = static,
                    global = encode, tail = false, rule = absmax,
                    zero_point = false, layout = row_major>,
  c = #lowbit.scale<group(128), tail = true, type = "f16", rule = "minmax",
                    zero_point = true>,
  d = #lowbit.scale<group(32), type = e8m0, rule = floor>,
  e = #lowbit.scale<group(32), type = e8m0, rule = rceil, mode = dynamic>}

// -----

// A ScaleSpec that differs only in fields its granularity does not use is
// the same attribute.
// CHECK-LABEL: @uniqued
// CHECK-SAME: a = #lowbit.scale<per_token, tail = false, type = f32, rule = absmax, mode = dynamic, zero_point = false, global = none, layout = row_major>
// CHECK-SAME: b = #lowbit.scale<per_token, tail = false, type = f32, rule = absmax, mode = dynamic, zero_point = false, global = none, layout = row_major>
func.func private @uniqued() attributes {
  a = #lowbit.scale<per_token>,
  b = #lowbit.scale<per_token, tail = false, type = f32, rule = absmax,
                    mode = dynamic, zero_point = false, global = none,
                    layout = row_major>}
