// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// The verifier's refusals, one case each.

func.func @escape(%x: tensor<4x64xf32>) {
  %c, %s, %y = lowbit.fused ins(%x : tensor<4x64xf32>)
      -> tensor<4x32xi8>, tensor<4x2xi8>, tensor<4x64xf32> {
  ^bb0(%in: tensor<4x64xf32>):
    %e = tensor.empty() : tensor<4x64xf32>
    %y = linalg.abs ins(%in : tensor<4x64xf32>) outs(%e : tensor<4x64xf32>)
        -> tensor<4x64xf32>
    %q, %sc = lowbit.quantize %y {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
    // expected-error @+1 {{yields 3 values; the kernel writes the 2 results of its lowbit.quantize and 0 side outputs}}
    lowbit.yield %q, %sc, %y : tensor<4x32xi8>, tensor<4x2xi8>, tensor<4x64xf32>
  }
  return
}

// -----

func.func @escape_instead_of_scales(%x: tensor<4x64xf32>) {
  %c, %s = lowbit.fused ins(%x : tensor<4x64xf32>)
      -> tensor<4x32xi8>, tensor<4x64xf32> {
  ^bb0(%in: tensor<4x64xf32>):
    %e = tensor.empty() : tensor<4x64xf32>
    %y = linalg.abs ins(%in : tensor<4x64xf32>) outs(%e : tensor<4x64xf32>)
        -> tensor<4x64xf32>
    %q, %sc = lowbit.quantize %y {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
    // expected-error @+1 {{value #1 must be result #1 of the lowbit.quantize}}
    lowbit.yield %q, %y : tensor<4x32xi8>, tensor<4x64xf32>
  }
  return
}

// -----

func.func @side_output_passthrough(%x: tensor<4x64xf32>) {
  %c, %s, %y = lowbit.fused ins(%x : tensor<4x64xf32>) attributes {side_outputs = 1}
      -> tensor<4x32xi8>, tensor<4x2xi8>, tensor<4x64xf32> {
  ^bb0(%in: tensor<4x64xf32>):
    %q, %sc = lowbit.quantize %in {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
    // expected-error @+1 {{side output #0 is a block argument, not a value the kernel computes}}
    lowbit.yield %q, %sc, %in : tensor<4x32xi8>, tensor<4x2xi8>, tensor<4x64xf32>
  }
  return
}

// -----

func.func @no_quantize(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{holds no lowbit.quantize: a kernel region feeds exactly one}}
  lowbit.fused ins(%x : tensor<4x64xf32>) {
  ^bb0(%in: tensor<4x64xf32>):
    lowbit.yield
  }
  return
}

// -----

func.func @two_quantizes(%x: tensor<4x64xf32>) {
  %c, %s = lowbit.fused ins(%x : tensor<4x64xf32>)
      -> tensor<4x32xi8>, tensor<4x2xi8> {
  ^bb0(%in: tensor<4x64xf32>):
    %q, %sc = lowbit.quantize %in {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
    // expected-error @+1 {{is a second lowbit.quantize in one lowbit.fused kernel}}
    %q2, %sc2 = lowbit.quantize %in {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
    lowbit.yield %q, %sc : tensor<4x32xi8>, tensor<4x2xi8>
  }
  return
}

// -----

func.func @foreign_op(%x: tensor<4x64xf32>) {
  %c, %s = lowbit.fused ins(%x : tensor<4x64xf32>)
      -> tensor<4x32xi8>, tensor<4x2xi8> {
  ^bb0(%in: tensor<4x64xf32>):
    // expected-error @+1 {{cannot be in a lowbit.fused kernel: its body holds arith, math, linalg, tensor and lowbit ops}}
    %m = bufferization.to_buffer %in : tensor<4x64xf32> to memref<4x64xf32>
    %q, %sc = lowbit.quantize %in {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
    lowbit.yield %q, %sc : tensor<4x32xi8>, tensor<4x2xi8>
  }
  return
}

// -----

func.func @outside_value(%x: tensor<4x64xf32>) {
  %e = tensor.empty() : tensor<4x64xf32>
  // expected-note @+1 {{required by region isolation constraints}}
  %c, %s = lowbit.fused ins(%x : tensor<4x64xf32>)
      -> tensor<4x32xi8>, tensor<4x2xi8> {
  ^bb0(%in: tensor<4x64xf32>):
    // expected-error @+1 {{using value defined outside the region}}
    %y = linalg.abs ins(%in : tensor<4x64xf32>) outs(%e : tensor<4x64xf32>)
        -> tensor<4x64xf32>
    %q, %sc = lowbit.quantize %y {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
    lowbit.yield %q, %sc : tensor<4x32xi8>, tensor<4x2xi8>
  }
  return
}

// -----

func.func @block_arguments(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{block argument #0 has type 'tensor<4x64xf16>' but operand #0 is 'tensor<4x64xf32>'}}
  %c, %s = lowbit.fused ins(%x : tensor<4x64xf32>)
      -> tensor<4x32xi8>, tensor<4x2xi8> {
  ^bb0(%in: tensor<4x64xf16>):
    %q, %sc = lowbit.quantize %in {scheme = #lowbit.scheme<"mxfp4">}
        : tensor<4x64xf16> -> tensor<4x32xi8> scales tensor<4x2xi8>
    lowbit.yield %q, %sc : tensor<4x32xi8>, tensor<4x2xi8>
  }
  return
}
