// The named quantization schemes of lowbit, in the dialect's text form.
//
// Each entry is a pair: the shorthand `#lowbit.scheme<"name">` and the same
// scheme in full form. Both spell one attribute: the shorthand expands
// through lowbit::lookupScheme (format/Scheme.cpp, the only table of
// schemes), and the full form prints back as the name because
// lowbit::findNamedScheme finds it. tests/lit/kernels_spec checks that every
// pair prints as one name, so this file cannot drift from the model.
//
// Every named scheme allows a short last group (`tail = true`) so that any
// [rows, cols] can be quantized.

module attributes {lowbit.named_schemes = {
  fp8_e4m3 = [
    #lowbit.scheme<"fp8_e4m3">,
    #lowbit.scheme<format = #lowbit.float<"e4m3">,
                   scale = #lowbit.scale<per_tensor, tail = false, type = f32,
                                         rule = absmax, mode = dynamic,
                                         zero_point = false, global = none,
                                         layout = row_major>,
                   packing = byte>],
  fp8_e5m2 = [
    #lowbit.scheme<"fp8_e5m2">,
    #lowbit.scheme<format = #lowbit.float<"e5m2">,
                   scale = #lowbit.scale<per_tensor, tail = false, type = f32,
                                         rule = absmax, mode = dynamic,
                                         zero_point = false, global = none,
                                         layout = row_major>,
                   packing = byte>],
  mxfp8 = [
    #lowbit.scheme<"mxfp8">,
    #lowbit.scheme<format = #lowbit.float<"e4m3">,
                   scale = #lowbit.scale<group(32, axis = 1), tail = true, type = e8m0,
                                         rule = floor, mode = dynamic,
                                         zero_point = false, global = none,
                                         layout = row_major>,
                   packing = byte>],
  mxfp6_e2m3 = [
    #lowbit.scheme<"mxfp6_e2m3">,
    #lowbit.scheme<format = #lowbit.float<"e2m3">,
                   scale = #lowbit.scale<group(32, axis = 1), tail = true, type = e8m0,
                                         rule = floor, mode = dynamic,
                                         zero_point = false, global = none,
                                         layout = row_major>,
                   packing = byte>],
  mxfp6_e3m2 = [
    #lowbit.scheme<"mxfp6_e3m2">,
    #lowbit.scheme<format = #lowbit.float<"e3m2">,
                   scale = #lowbit.scale<group(32, axis = 1), tail = true, type = e8m0,
                                         rule = floor, mode = dynamic,
                                         zero_point = false, global = none,
                                         layout = row_major>,
                   packing = byte>],
  mxfp4 = [
    #lowbit.scheme<"mxfp4">,
    #lowbit.scheme<format = #lowbit.float<"e2m1">,
                   scale = #lowbit.scale<group(32, axis = 1), tail = true, type = e8m0,
                                         rule = floor, mode = dynamic,
                                         zero_point = false, global = none,
                                         layout = row_major>,
                   packing = nibble>],
  nvfp4 = [
    #lowbit.scheme<"nvfp4">,
    #lowbit.scheme<format = #lowbit.float<"e2m1">,
                   scale = #lowbit.scale<group(16, axis = 1), tail = true, type = ue4m3,
                                         rule = absmax, mode = dynamic,
                                         zero_point = false, global = decode,
                                         layout = row_major>,
                   packing = nibble>],
  int4_g128 = [
    #lowbit.scheme<"int4_g128">,
    #lowbit.scheme<format = #lowbit.int<"uint4">,
                   scale = #lowbit.scale<group(128, axis = 1), tail = true, type = f16,
                                         rule = minmax, mode = dynamic,
                                         zero_point = true, global = none,
                                         layout = row_major>,
                   packing = nibble>],
  int8 = [
    #lowbit.scheme<"int8">,
    #lowbit.scheme<format = #lowbit.int<"int8">,
                   scale = #lowbit.scale<per_tensor, tail = false, type = f32,
                                         rule = absmax, mode = dynamic,
                                         zero_point = false, global = none,
                                         layout = row_major>,
                   packing = byte>],
  int8_g64 = [
    #lowbit.scheme<"int8_g64">,
    #lowbit.scheme<format = #lowbit.int<"int8">,
                   scale = #lowbit.scale<group(64, axis = 1), tail = true, type = f32,
                                         rule = absmax, mode = dynamic,
                                         zero_point = false, global = none,
                                         layout = row_major>,
                   packing = byte>]
}} {
}
