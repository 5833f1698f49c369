// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// Parser errors and attribute verifier errors, one case each.

//===----------------------------------------------------------------------===//
// #lowbit.float / #lowbit.int
//===----------------------------------------------------------------------===//

// expected-error @+1 {{invalid format name 'e4m9x': expected a named format}}
func.func private @f() attributes {a = #lowbit.float<"e4m9x">}

// -----

// The model's own message says why a parametric name is invalid.
// expected-error @+1 {{invalid format name 'e9m2': exponent bits must be 1..8, got 9}}
func.func private @f() attributes {a = #lowbit.float<"e9m2">}

// -----

// expected-error @+1 {{'int4' is an integer format; write it as #lowbit.int<"int4">}}
func.func private @f() attributes {a = #lowbit.float<"int4">}

// -----

// expected-error @+1 {{'e2m1' is a float format; write it as #lowbit.float<"e2m1">}}
func.func private @f() attributes {a = #lowbit.int<"e2m1">}

// -----

// expected-error @+1 {{missing field 'specials'}}
func.func private @f() attributes {a = #lowbit.float<exp = 4, man = 3, bias = 7, signed = true>}

// -----

// expected-error @+1 {{field 'man' is given twice}}
func.func private @f() attributes {a = #lowbit.float<exp = 4, man = 3, man = 3, bias = 7, signed = true, specials = fn>}

// -----

// expected-error @+1 {{unknown field 'sign' (expected exp, man, bias, signed, specials)}}
func.func private @f() attributes {a = #lowbit.float<exp = 4, man = 3, bias = 7, sign = true, specials = fn>}

// -----

// expected-error @+1 {{expected 'true' or 'false'}}
func.func private @f() attributes {a = #lowbit.float<exp = 4, man = 3, bias = 7, signed = yes, specials = fn>}

// -----

// expected-error @+1 {{unknown special-code convention 'nan' (expected ieee, fn, finite)}}
func.func private @f() attributes {a = #lowbit.float<exp = 4, man = 3, bias = 7, signed = true, specials = nan>}

// -----

// expected-error @+1 {{invalid float format: exponent bits must be 1..8, got 9}}
func.func private @f() attributes {a = #lowbit.float<exp = 9, man = 3, bias = 7, signed = true, specials = fn>}

// -----

// expected-error @+1 {{invalid float format: an ieee format needs at least 2 exponent bits and 1 mantissa bit}}
func.func private @f() attributes {a = #lowbit.float<exp = 8, man = 0, bias = 127, signed = false, specials = ieee>}

// -----

// expected-error @+1 {{invalid float format: a float format has 2..16 bits in all, got 17}}
func.func private @f() attributes {a = #lowbit.float<exp = 8, man = 8, bias = 127, signed = true, specials = ieee>}

// -----

// expected-error @+1 {{invalid float format: bias must be 0..127 so that every value is an exact f32, got 200}}
func.func private @f() attributes {a = #lowbit.float<exp = 8, man = 3, bias = 200, signed = true, specials = ieee>}

// -----

// expected-error @+1 {{missing field 'signed'}}
func.func private @f() attributes {a = #lowbit.int<bits = 4>}

// -----

// expected-error @+1 {{unknown field 'width' (expected bits, signed)}}
func.func private @f() attributes {a = #lowbit.int<bits = 4, width = 4>}

// -----

// expected-error @+1 {{invalid integer format: an integer format has 2..16 bits, got 17}}
func.func private @f() attributes {a = #lowbit.int<bits = 17, signed = true>}

// -----

//===----------------------------------------------------------------------===//
// #lowbit.scale
//===----------------------------------------------------------------------===//

// expected-error @+1 {{unknown granularity 'per_row' (expected per_tensor, per_channel, per_token, group, block)}}
func.func private @f() attributes {a = #lowbit.scale<per_row>}

// -----

// expected-error @+1 {{unknown field 'size' (expected tail, type, rule, mode, zero_point, global, layout)}}
func.func private @f() attributes {a = #lowbit.scale<group(32), size = 32>}

// -----

// expected-error @+1 {{field 'type' is given twice}}
func.func private @f() attributes {a = #lowbit.scale<per_tensor, type = f32, type = f16>}

// -----

// expected-error @+1 {{unknown scale type 'f8' (expected f32, f16, bf16, e8m0, ue4m3)}}
func.func private @f() attributes {a = #lowbit.scale<per_tensor, type = f8>}

// -----

// expected-error @+1 {{unknown scale rule 'max' (expected absmax, minmax, floor, rceil)}}
func.func private @f() attributes {a = #lowbit.scale<per_tensor, rule = max>}

// -----

// expected-error @+1 {{unknown scale mode 'jit' (expected static, dynamic)}}
func.func private @f() attributes {a = #lowbit.scale<per_tensor, mode = jit>}

// -----

// expected-error @+1 {{unknown global scale convention 'torchao' (expected none, decode, encode)}}
func.func private @f() attributes {a = #lowbit.scale<group(16), global = torchao>}

// -----

// expected-error @+1 {{unknown scale layout 'col_major' (expected row_major, swizzle_128x4)}}
func.func private @f() attributes {a = #lowbit.scale<per_tensor, layout = col_major>}

// -----

// expected-error @+1 {{expected 'true' or 'false'}}
func.func private @f() attributes {a = #lowbit.scale<group(32), tail = 1>}

// -----

// expected-error @+1 {{expected '('}}
func.func private @f() attributes {a = #lowbit.scale<per_channel>}

// -----

// expected-error @+1 {{a block is <rows>x<cols>, got 3 dimension(s)}}
func.func private @f() attributes {a = #lowbit.scale<block(1x2x3)>}

// -----

// expected-error @+1 {{block height 4294967296 is larger than the maximum 2^30 (1073741824)}}
func.func private @f() attributes {a = #lowbit.scale<block(4294967296x1)>}

// -----

// expected-error @+1 {{axis must be 0 (rows) or 1 (cols), got 2}}
func.func private @f() attributes {a = #lowbit.scale<per_channel(axis = 2)>}

// -----

// expected-error @+1 {{group size must be positive, got 0}}
func.func private @f() attributes {a = #lowbit.scale<group(0)>}

// -----

// expected-error @+1 {{group size must be positive, got -32}}
func.func private @f() attributes {a = #lowbit.scale<group(-32, axis = 1)>}

// -----

// expected-error @+1 {{block must be positive in both dimensions, got 0x4}}
func.func private @f() attributes {a = #lowbit.scale<block(0x4)>}

// -----

//===----------------------------------------------------------------------===//
// #lowbit.scheme
//===----------------------------------------------------------------------===//

// expected-error @+1 {{unknown scheme 'mxfp3' (known: fp8_e4m3, fp8_e5m2, mxfp8, mxfp6_e2m3, mxfp6_e3m2, mxfp4, nvfp4, int4_g128, int8, int8_g64)}}
func.func private @f() attributes {a = #lowbit.scheme<"mxfp3">}

// -----

// expected-error @+1 {{missing field 'packing'}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.float<"e4m3">, scale = #lowbit.scale<per_tensor>>}

// -----

// expected-error @+1 {{unknown field 'element' (expected format, scale, packing)}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.float<"e4m3">, element = #lowbit.float<"e4m3">>}

// -----

// expected-error @+1 {{expected #lowbit.float or #lowbit.int, got f32}}
func.func private @f() attributes {a = #lowbit.scheme<format = f32, scale = #lowbit.scale<per_tensor>, packing = byte>}

// -----

// expected-error @+1 {{expected #lowbit.scale, got #lowbit.scheme<"mxfp4">}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.float<"e4m3">, scale = #lowbit.scheme<"mxfp4">, packing = byte>}

// -----

// expected-error @+1 {{unknown packing 'bit' (expected byte, nibble)}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.float<"e4m3">, scale = #lowbit.scale<per_tensor>, packing = bit>}

// -----

// The scheme verifier is lowbit::validateScheme; a few of its checks:

// expected-error @+1 {{invalid scheme: an e8m0 scale cannot have a zero point (MX scaling is symmetric)}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.int<"uint4">, scale = #lowbit.scale<group(32), type = e8m0, rule = floor, zero_point = true>, packing = nibble>}

// -----

// expected-error @+1 {{invalid scheme: format e4m3 has 8 bits, more than its 4-bit container (nibble packing)}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.float<"e4m3">, scale = #lowbit.scale<per_tensor>, packing = nibble>}

// -----

// expected-error @+1 {{invalid scheme: a zero point needs an integer element format, not e4m3}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.float<"e4m3">, scale = #lowbit.scale<per_tensor, rule = minmax, zero_point = true>, packing = byte>}

// -----

// expected-error @+1 {{invalid scheme: an e8m0 scale is a power of two: its rule must be floor or rceil, not absmax}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.float<"e2m1">, scale = #lowbit.scale<group(32), type = e8m0>, packing = nibble>}

// -----

// expected-error @+1 {{invalid scheme: the swizzle_128x4 layout holds one-byte scales (e8m0 or ue4m3) of groups along the last axis}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.float<"e4m3">, scale = #lowbit.scale<per_tensor, layout = swizzle_128x4>, packing = byte>}

// -----

// llama.cpp's Q4_0 / Q8_0 rules and packing are valid schemes of the
// reference quantizer, but no kernel lowers them yet (referenceOnlyReason):

// expected-error @+1 {{scheme not supported by the compiler: the scale rule signed_max_reciprocal (llama.cpp's) has no kernel yet, only the reference quantizer}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.int<"int4">, scale = #lowbit.scale<group(32), type = f16, rule = signed_max_reciprocal>, packing = nibble_halves>}

// -----

// expected-error @+1 {{scheme not supported by the compiler: the nibble_halves packing (llama.cpp's Q4_0) has no kernel yet, only the reference quantizer}}
func.func private @f() attributes {a = #lowbit.scheme<format = #lowbit.int<"int4">, scale = #lowbit.scale<group(32), type = f16>, packing = nibble_halves>}
