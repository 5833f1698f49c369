// RUN: lowbit-opt %s -split-input-file | FileCheck %s
// RUN: lowbit-opt %s -split-input-file | lowbit-opt -split-input-file | FileCheck %s

// Every named format prints as its name.
// CHECK-LABEL: @named_floats
// CHECK-SAME: bf16 = #lowbit.float<"bf16">
// CHECK-SAME: e2m1 = #lowbit.float<"e2m1">
// CHECK-SAME: e2m3 = #lowbit.float<"e2m3">
// CHECK-SAME: e3m2 = #lowbit.float<"e3m2">
// CHECK-SAME: e4m3 = #lowbit.float<"e4m3">
// CHECK-SAME: e5m2 = #lowbit.float<"e5m2">
// CHECK-SAME: e8m0 = #lowbit.float<"e8m0">
// CHECK-SAME: f16 = #lowbit.float<"f16">
// CHECK-SAME: ue4m3 = #lowbit.float<"ue4m3">
func.func private @named_floats() attributes {
  e4m3 = #lowbit.float<"e4m3">, e5m2 = #lowbit.float<"e5m2">,
  e2m3 = #lowbit.float<"e2m3">, e3m2 = #lowbit.float<"e3m2">,
  e2m1 = #lowbit.float<"e2m1">, e8m0 = #lowbit.float<"e8m0">,
  ue4m3 = #lowbit.float<"ue4m3">, f16 = #lowbit.float<"f16">,
  bf16 = #lowbit.float<"bf16">}

// -----

// CHECK-LABEL: @named_ints
// CHECK-SAME: int4 = #lowbit.int<"int4">
// CHECK-SAME: int8 = #lowbit.int<"int8">
// CHECK-SAME: uint4 = #lowbit.int<"uint4">
// CHECK-SAME: uint8 = #lowbit.int<"uint8">
func.func private @named_ints() attributes {
  int8 = #lowbit.int<"int8">, int4 = #lowbit.int<"int4">,
  uint4 = #lowbit.int<"uint4">, uint8 = #lowbit.int<"uint8">}

// -----

// Bare identifiers, the model's aliases and the full form of a named format
// all print as the canonical name.
// CHECK-LABEL: @spellings
// CHECK-SAME: alias = #lowbit.float<"e4m3">
// CHECK-SAME: bare = #lowbit.float<"e2m1">
// CHECK-SAME: bare_int = #lowbit.int<"uint4">
// CHECK-SAME: full = #lowbit.float<"e4m3">
// CHECK-SAME: full_int = #lowbit.int<"int4">
// CHECK-SAME: mlir_name = #lowbit.float<"e2m1">
// CHECK-SAME: parametric = #lowbit.float<"e5m2">
func.func private @spellings() attributes {
  alias = #lowbit.float<"f8E4M3FN">,
  bare = #lowbit.float<e2m1>,
  bare_int = #lowbit.int<uint4>,
  full = #lowbit.float<exp = 4, man = 3, bias = 7, signed = true,
                       specials = fn>,
  full_int = #lowbit.int<signed = true, bits = 4>,
  mlir_name = #lowbit.float<"f4E2M1FN">,
  parametric = #lowbit.float<"e5m2b15-ieee">}

// -----

// Formats that are not named print in the full form, whichever way they
// were written.
// CHECK-LABEL: @parametric
// CHECK-SAME: e3m4 = #lowbit.float<exp = 3, man = 4, bias = 3, signed = true, specials = finite>
// CHECK-SAME: e3m4b5fn = #lowbit.float<exp = 3, man = 4, bias = 5, signed = true, specials = fn>
// CHECK-SAME: e4m3b11 = #lowbit.float<exp = 4, man = 3, bias = 11, signed = true, specials = ieee>
// CHECK-SAME: full = #lowbit.float<exp = 5, man = 3, bias = 20, signed = false, specials = finite>
// CHECK-SAME: int16 = #lowbit.int<bits = 16, signed = true>
// CHECK-SAME: ue5m3 = #lowbit.float<exp = 5, man = 3, bias = 15, signed = false, specials = finite>
// CHECK-SAME: uint6 = #lowbit.int<bits = 6, signed = false>
func.func private @parametric() attributes {
  e3m4 = #lowbit.float<"e3m4">,
  e3m4b5fn = #lowbit.float<"e3m4b5-fn">,
  e4m3b11 = #lowbit.float<"e4m3b11-ieee">,
  full = #lowbit.float<specials = finite, signed = false, bias = 20, man = 3,
                       exp = 5>,
  int16 = #lowbit.int<"int16">,
  uint6 = #lowbit.int<bits = 6, signed = false>,
  ue5m3 = #lowbit.float<"ue5m3">}
