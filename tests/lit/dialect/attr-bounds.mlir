// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// Sizes and axes in #lowbit.scale are read as int64 and refused past
// their bounds (docs/quantization.md, "Sizes"), never narrowed to int.

// expected-error @+1 {{group size 4294967328 is larger than the maximum 2^30 (1073741824)}}
func.func private @f() attributes {a = #lowbit.scale<group(4294967328)>}

// -----

// Fits an int, but past the bound.
// expected-error @+1 {{group size 1073741825 is larger than the maximum 2^30 (1073741824)}}
func.func private @f() attributes {a = #lowbit.scale<group(1073741825)>}

// -----

// expected-error @+1 {{axis must be 0 (rows) or 1 (cols), got 4294967297}}
func.func private @f() attributes {a = #lowbit.scale<group(32, axis = 4294967297)>}

// -----

// expected-error @+1 {{block height 4294967297 is larger than the maximum 2^30 (1073741824)}}
func.func private @f() attributes {a = #lowbit.scale<block(4294967297x4294967297)>}

// -----

// expected-error @+1 {{block width 1073741825 is larger than the maximum 2^30 (1073741824)}}
func.func private @f() attributes {a = #lowbit.scale<block(2x1073741825)>}

// -----

// The bound itself is accepted.
func.func private @f() attributes {a = #lowbit.scale<group(1073741824), tail = true>}
