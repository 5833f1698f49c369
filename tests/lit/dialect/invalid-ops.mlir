// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// Op verifier errors, one case each.

func.func @f(%x: tensor<2x4x64xf32>) {
  // expected-error @+1 {{codes shape 4x64 does not match the scheme's 2x4x64 for a 2x4x64 tensor}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<2x4x64xf32> -> tensor<4x64xi8> scales tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x100xf32>) {
  // expected-error @+1 {{scheme does not fit a 4x100 tensor: group size 32 does not divide 100 columns and the scheme allows no tail}}
  %c, %s = lowbit.quantize %x
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<group(32), type = e8m0, rule = floor>,
          packing = byte>}
      : tensor<4x100xf32> -> tensor<4x100xi8> scales tensor<4x4xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>, %s: tensor<4x2xi8>) {
  // expected-error @+1 {{takes no scales operand: the scheme's scales are dynamic (computed by the kernel)}}
  %c = lowbit.quantize %x scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp8">} : tensor<4x64xf32> -> tensor<4x64xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{must produce a scales result: the scheme's scales are dynamic (computed by the kernel)}}
  %c = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<4x64xf32> -> tensor<4x64xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{needs a scales operand: the scheme's scales are static (passed in)}}
  %c = lowbit.quantize %x
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<per_tensor, mode = static>, packing = byte>}
      : tensor<4x64xf32> -> tensor<4x64xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>, %s: tensor<1x1xf32>) {
  // expected-error @+1 {{produces no scales result: the scheme's scales are static (passed in)}}
  %c, %s2 = lowbit.quantize %x scales(%s : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<per_tensor, mode = static>, packing = byte>}
      : tensor<4x64xf32> -> tensor<4x64xi8> scales tensor<1x1xf32>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>, %z: tensor<4x2xi8>) {
  // expected-error @+1 {{takes no zeros operand: the scheme has no zero point}}
  %c, %s = lowbit.quantize %x zeros(%z : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<4x64xf32> -> tensor<4x64xi8> scales tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{produces no zeros result: the scheme has no zero point}}
  %c, %s, %z = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<4x64xf32> -> tensor<4x64xi8> scales tensor<4x2xi8>
        zeros tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x256xf32>) {
  // expected-error @+1 {{must produce a zeros result: the scheme's scales are dynamic (computed by the kernel)}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<4x256xf32> -> tensor<4x128xi8> scales tensor<4x2xf16>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{takes the global scale as an operand or produces it as a result, not both}}
  %c, %s, %g2 = lowbit.quantize %x global(%g : tensor<1xf32>)
      {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x4xi8>
        global tensor<1xf32>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{needs a global scale operand or result: the scheme's scales are dynamic (computed by the kernel)}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x4xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{produces no global scale result: the scheme has no global scale}}
  %c, %s, %g = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
        global tensor<1xf32>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>, %s: tensor<4x4xi8>) {
  // expected-error @+1 {{needs a global scale operand: the scheme's scales are static (passed in)}}
  %c = lowbit.quantize %x scales(%s : tensor<4x4xi8>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e2m1">,
          scale = #lowbit.scale<group(16), type = ue4m3, mode = static,
                                global = encode>,
          packing = nibble>}
      : tensor<4x64xf32> -> tensor<4x32xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{codes must have element type 'i8' (4-bit container, nibble packing), got 'i16'}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi16> scales tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // Nibble packing: 64 columns are 32 bytes.
  // expected-error @+1 {{codes shape 4x64 does not match the scheme's 4x32 for a 4x64 tensor}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<4x64xf32> -> tensor<4x64xi8> scales tensor<4x2xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{scales must have element type 'i8' (e8m0 scales), got 'f32'}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xf32>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // Groups of 32: 64 columns have 2 scales per row.
  // expected-error @+1 {{scales shape 4x4 does not match the scheme's 4x2 for a 4x64 tensor}}
  %c, %s = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x4xi8>
  return
}

// -----

func.func @f(%x: tensor<4x256xf32>) {
  // expected-error @+1 {{zeros must have element type 'i8' (zero points are stored like codes), got 'i16'}}
  %c, %s, %z = lowbit.quantize %x {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<4x256xf32> -> tensor<4x128xi8> scales tensor<4x2xf16>
        zeros tensor<4x2xi16>
  return
}

// -----

func.func @f(%x: tensor<4x256xf32>) {
  // expected-error @+1 {{zeros shape 4x1 does not match the scheme's 4x2 for a 4x256 tensor}}
  %c, %s, %z = lowbit.quantize %x {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<4x256xf32> -> tensor<4x128xi8> scales tensor<4x2xf16>
        zeros tensor<4x1xi8>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{global scale must be tensor<1xf32> or tensor<1x1xf32>, got 'tensor<4xf32>'}}
  %c, %s, %g = lowbit.quantize %x {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x4xi8>
        global tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// lowbit.dequantize
//===----------------------------------------------------------------------===//

func.func @f(%c: tensor<4x128xi8>, %s: tensor<4x2xf16>) {
  // expected-error @+1 {{needs a zeros operand: the scheme has a zero point}}
  %y = lowbit.dequantize %c scales(%s : tensor<4x2xf16>)
      {scheme = #lowbit.scheme<"int4_g128">} : tensor<4x128xi8> -> tensor<4x256xf32>
  return
}

// -----

func.func @f(%c: tensor<4x64xi8>, %s: tensor<4x2xi8>, %z: tensor<4x2xi8>) {
  // expected-error @+1 {{takes no zeros operand: the scheme has no zero point}}
  %y = lowbit.dequantize %c scales(%s : tensor<4x2xi8>)
      zeros(%z : tensor<4x2xi8>) {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<4x64xi8> -> tensor<4x64xf32>
  return
}

// -----

func.func @f(%c: tensor<4x32xi8>, %s: tensor<4x4xi8>) {
  // expected-error @+1 {{needs a global scale operand: the scheme has a global scale}}
  %y = lowbit.dequantize %c scales(%s : tensor<4x4xi8>)
      {scheme = #lowbit.scheme<"nvfp4">} : tensor<4x32xi8> -> tensor<4x64xf32>
  return
}

// -----

func.func @f(%c: tensor<4x32xi8>, %s: tensor<4x2xi8>, %g: tensor<1xf32>) {
  // expected-error @+1 {{takes no global scale operand: the scheme has no global scale}}
  %y = lowbit.dequantize %c scales(%s : tensor<4x2xi8>)
      global(%g : tensor<1xf32>) {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<4x32xi8> -> tensor<4x64xf32>
  return
}

// -----

func.func @f(%c: tensor<3x16xi8>, %s: tensor<3x2xi8>) {
  // The logical shape comes from the result: 33 columns need 17 bytes.
  // expected-error @+1 {{codes shape 3x16 does not match the scheme's 3x17 for a 3x33 tensor}}
  %y = lowbit.dequantize %c scales(%s : tensor<3x2xi8>)
      {scheme = #lowbit.scheme<"mxfp4">} : tensor<3x16xi8> -> tensor<3x33xf32>
  return
}

// -----

func.func @f(%c: tensor<4x48xi8>, %s: tensor<4x2xi8>) {
  // expected-error @+1 {{scheme does not fit a 4x48 tensor: group size 32 does not divide 48 columns and the scheme allows no tail}}
  %y = lowbit.dequantize %c scales(%s : tensor<4x2xi8>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<group(32), type = e8m0, rule = rceil>,
          packing = byte>}
      : tensor<4x48xi8> -> tensor<4x48xf32>
  return
}

// -----

func.func @f(%c: tensor<4x64xi8>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{scales must have element type 'i8' (e8m0 scales), got 'f32'}}
  %y = lowbit.dequantize %c scales(%s : tensor<4x2xf32>)
      {scheme = #lowbit.scheme<"mxfp8">} : tensor<4x64xi8> -> tensor<4x64xf32>
  return
}
