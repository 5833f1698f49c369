// RUN: lowbit-opt %s -split-input-file -verify-diagnostics -canonicalize | FileCheck %s

// Round trips of the scalar conversion ops. Default-valued attributes
// (saturate = true, rounding = "rn") are not printed.

// CHECK-LABEL: func.func @encode_decode
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e4m3">} : f32 to i8
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e5m2">, saturate = false} : f32 to i8
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e8m0">, rounding = "rp"} : f32 to i8
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.int<"int4">, rounding = "rz"} : f32 to i8
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"bf16">} : f32 to i16
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e2m1">} : vector<2xf32> to vector<2xi8>
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"e4m3">} : i8 to f32
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<"f16">} : i16 to f32
// CHECK: lowbit.decode %{{.*}} {format = #lowbit.float<exp = 3, man = 4, bias = 5, signed = true, specials = fn>} : vector<4xi8> to vector<4xf32>
func.func @encode_decode(%x: f32, %v: vector<2xf32>, %c: i8, %h: i16,
                         %cv: vector<4xi8>)
    -> (i8, i8, i8, i8, i16, vector<2xi8>, f32, f32, vector<4xf32>) {
  %0 = lowbit.encode %x {format = #lowbit.float<"e4m3">, saturate = true, rounding = "rn"} : f32 to i8
  %1 = lowbit.encode %x {format = #lowbit.float<"e5m2">, saturate = false} : f32 to i8
  %2 = lowbit.encode %x {format = #lowbit.float<"e8m0">, rounding = "rp"} : f32 to i8
  %3 = lowbit.encode %x {format = #lowbit.int<"int4">, rounding = "rz"} : f32 to i8
  %4 = lowbit.encode %x {format = #lowbit.float<"bf16">} : f32 to i16
  %5 = lowbit.encode %v {format = #lowbit.float<"e2m1">} : vector<2xf32> to vector<2xi8>
  %6 = lowbit.decode %c {format = #lowbit.float<"e4m3">} : i8 to f32
  %7 = lowbit.decode %h {format = #lowbit.float<"f16">} : i16 to f32
  %8 = lowbit.decode %cv {format = #lowbit.float<"e3m4b5-fn">} : vector<4xi8> to vector<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8
      : i8, i8, i8, i8, i16, vector<2xi8>, f32, f32, vector<4xf32>
}

// -----

// The ops are pure: canonicalize drops an unused conversion.
// CHECK-LABEL: func.func @pure
// CHECK-NOT: lowbit.encode
func.func @pure(%x: f32) {
  %0 = lowbit.encode %x {format = #lowbit.float<"e4m3">} : f32 to i8
  return
}

// -----

func.func @wide_code(%x: f32) {
  // expected-error @+1 {{codes of e4m3 (8 bits) must be i8, got i16}}
  %0 = lowbit.encode %x {format = #lowbit.float<"e4m3">} : f32 to i16
  return
}

// -----

func.func @narrow_code(%x: f32) {
  // expected-error @+1 {{codes of f16 (16 bits) must be i16, got i8}}
  %0 = lowbit.encode %x {format = #lowbit.float<"f16">} : f32 to i8
  return
}

// -----

func.func @decode_width(%c: i16) {
  // expected-error @+1 {{codes of e2m1 (4 bits) must be i8, got i16}}
  %0 = lowbit.decode %c {format = #lowbit.float<"e2m1">} : i16 to f32
  return
}

// -----

func.func @rounding(%x: f32) {
  // expected-error @+1 {{rounding must be "rn", "rz" or "rp", got "rm"}}
  %0 = lowbit.encode %x {format = #lowbit.float<"e4m3">, rounding = "rm"} : f32 to i8
  return
}

// -----

func.func @shape(%v: vector<4xf32>) {
  // expected-error @+1 {{must both be scalars or vectors of the same shape}}
  %0 = lowbit.encode %v {format = #lowbit.float<"e4m3">} : vector<4xf32> to vector<2xi8>
  return
}

// -----

func.func @scalar_vector(%v: vector<2xf32>) {
  // expected-error @+1 {{must both be scalars or vectors of the same shape}}
  %0 = lowbit.encode %v {format = #lowbit.float<"e4m3">} : vector<2xf32> to i8
  return
}

// -----

func.func @not_a_format(%x: f32) {
  // expected-error @+1 {{attribute 'format' failed to satisfy constraint}}
  %0 = lowbit.encode %x {format = 3 : i32} : f32 to i8
  return
}

// -----

func.func @f16_input(%x: f16) {
  // expected-error @+1 {{operand #0 must be}}
  %0 = lowbit.encode %x {format = #lowbit.float<"e4m3">} : f16 to i8
  return
}
