// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// lowbit.matmul's verifier errors, one case each.

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<1x64xf32>) {
  // expected-error @+1 {{is not a weight scheme: per_channel(axis=1) gives one scale per input column k}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<1x64xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.int<"int8">,
          scale = #lowbit.scale<per_channel(axis = 1)>, packing = byte>}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<64x64xi8>, %s: tensor<2x64xf32>) {
  // expected-error @+1 {{is not a weight scheme: group(32;axis=0) groups output channels}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<2x64xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.int<"int8">,
          scale = #lowbit.scale<group(32, axis = 0)>, packing = byte>}
      : tensor<3x64xf32>, tensor<64x64xi8> -> tensor<3x64xf32>
  return
}

// -----

func.func @f(%x: tensor<3x100xf32>, %c: tensor<4x100xi8>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{k=100: the last group of 64 along K straddles its end and the scheme allows no tail (tail=false)}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.int<"int8">,
          scale = #lowbit.scale<group(64)>, packing = byte>}
      : tensor<3x100xf32>, tensor<4x100xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<4x2xi8>) {
  // expected-error @+1 {{result rows (2) differ from X's rows M (3)}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<4x2xi8>) {
  // expected-error @+1 {{result columns (5) differ from the weights' rows N (4)}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x5xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<4x2xi8>,
             %b: tensor<5xf32>) {
  // expected-error @+1 {{bias has 5 elements for N = 4}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      bias(%b : tensor<5xf32>) {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x32xi8>, %s: tensor<4x2xi8>) {
  // K = 64 in X, 32 in byte-packed codes.
  // expected-error @+1 {{codes shape 4x32 does not match the scheme's 4x64 for a 4x64 tensor}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x32xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x32xi8>, %s: tensor<4x4xi8>) {
  // expected-error @+1 {{scales shape 4x4 does not match the scheme's 4x2 for a 4x64 tensor}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x4xi8>)
      {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<3x64xf32>, tensor<4x32xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{scales must have element type 'i8' (e8m0 scales), got 'f32'}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xf32>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x256xf32>, %c: tensor<4x128xi8>, %s: tensor<4x2xf16>) {
  // expected-error @+1 {{needs a zeros operand: the scheme has a zero point}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xf16>)
      {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<3x256xf32>, tensor<4x128xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<4x2xi8>,
             %z: tensor<4x2xi8>) {
  // expected-error @+1 {{takes no zeros operand: the scheme has no zero point}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      zeros(%z : tensor<4x2xi8>) {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x32xi8>, %s: tensor<4x4xi8>) {
  // expected-error @+1 {{needs a global scale operand: the scheme has a global scale}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x4xi8>)
      {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<3x64xf32>, tensor<4x32xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<4x2xi8>,
             %g: tensor<2xf32>) {
  // expected-error @+1 {{takes no global scale operand: the scheme has no global scale}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      global(%g : tensor<2xf32>) {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x32xi8>, %s: tensor<4x4xi8>,
             %g: tensor<2xf32>) {
  // expected-error @+1 {{global scale must be tensor<1xf32> or tensor<1x1xf32>, got 'tensor<2xf32>'}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x4xi8>)
      global(%g : tensor<2xf32>) {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<3x64xf32>, tensor<4x32xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf64>, %c: tensor<4x64xi8>, %s: tensor<4x2xi8>) {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf64>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<4x2xi8>) {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<2x3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<4x2xi8>,
             %b: tensor<4xf16>) {
  // expected-error @+1 {{operand #3 must be 1D tensor of 32-bit float values}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      bias(%b : tensor<4xf16>) {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<1x1xf32>) {
  // expected-error @+1 {{act_scheme #lowbit.scheme<"fp8_e4m3">: the weights are int8 and the activations e4m3: both integer or both float}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<"int8">, act_scheme = #lowbit.scheme<"fp8_e4m3">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x32xi8>, %s: tensor<4x2xi8>) {
  // expected-error @+1 {{the activations' scales cover 16 along K and the weights' 32}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp4">, act_scheme = #lowbit.scheme<"nvfp4">}
      : tensor<3x64xf32>, tensor<4x32xi8> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x64xf32>, %c: tensor<4x64xi8>, %s: tensor<1x1xf32>) {
  // expected-error @+1 {{the activations' scheme has zero points}}
  %y = lowbit.matmul %x, %c scales(%s : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<"int8">, act_scheme = #lowbit.scheme<"int4_g128">}
      : tensor<3x64xf32>, tensor<4x64xi8> -> tensor<3x4xf32>
  return
}
