// Quantize kernel templates. Shapes are dynamic: the JIT specializes rows,
// cols and the input dtype per call (see DESIGN.md, "Specialization key").
//
// Dynamic mode: the kernel computes the scales (and zero points and global
// scale) and returns them. Static mode: the caller passes them in.
// Result order is always codes, scales, zeros, global.

// FP8 e4m3 with one f32 scale per tensor.
func.func @quantize_fp8_e4m3_dynamic(%x: tensor<?x?xf32>)
    -> (tensor<?x?xi8>, tensor<1x1xf32>) {
  %codes, %scales = lowbit.quantize %x {scheme = #lowbit.scheme<"fp8_e4m3">}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<1x1xf32>
  return %codes, %scales : tensor<?x?xi8>, tensor<1x1xf32>
}

// The same with a calibrated scale passed in (vLLM's static FP8).
func.func @quantize_fp8_e4m3_static(%x: tensor<?x?xbf16>,
                                    %scale: tensor<1x1xf32>)
    -> tensor<?x?xi8> {
  %codes = lowbit.quantize %x scales(%scale : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<per_tensor, type = f32, rule = absmax,
                                mode = static>,
          packing = byte>}
      : tensor<?x?xbf16> -> tensor<?x?xi8>
  return %codes : tensor<?x?xi8>
}

// MXFP4: e2m1 nibbles, one e8m0 scale (as its byte code) per 32 elements.
func.func @quantize_mxfp4_dynamic(%x: tensor<?x?xf32>)
    -> (tensor<?x?xi8>, tensor<?x?xi8>) {
  %codes, %scales = lowbit.quantize %x {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  return %codes, %scales : tensor<?x?xi8>, tensor<?x?xi8>
}

// NVFP4: e2m1 nibbles, a ue4m3 scale per 16 elements and an f32 global
// scale in the torchao (decode multiplier) convention, all computed here.
func.func @quantize_nvfp4_dynamic(%x: tensor<?x?xf16>)
    -> (tensor<?x?xi8>, tensor<?x?xi8>, tensor<1xf32>) {
  %codes, %scales, %global = lowbit.quantize %x
      {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<?x?xf16> -> tensor<?x?xi8> scales tensor<?x?xi8>
        global tensor<1xf32>
  return %codes, %scales, %global : tensor<?x?xi8>, tensor<?x?xi8>,
                                    tensor<1xf32>
}

// NVFP4 as vLLM, TensorRT-LLM and FlashInfer call it: the caller passes the
// global scale as 2688 / amax (encode convention), block scales are
// computed, and the scales are laid out for Blackwell tensor cores.
func.func @quantize_nvfp4_given_global(%x: tensor<?x?xbf16>,
                                       %global: tensor<1xf32>)
    -> (tensor<?x?xi8>, tensor<?x?xi8>) {
  %codes, %scales = lowbit.quantize %x global(%global : tensor<1xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e2m1">,
          scale = #lowbit.scale<group(16), tail = true, type = ue4m3,
                                rule = absmax, mode = dynamic,
                                global = encode, layout = swizzle_128x4>,
          packing = nibble>}
      : tensor<?x?xbf16> -> tensor<?x?xi8> scales tensor<?x?xi8>
  return %codes, %scales : tensor<?x?xi8>, tensor<?x?xi8>
}

// NVFP4 with every scale passed in.
func.func @quantize_nvfp4_static(%x: tensor<?x?xf32>, %scales: tensor<?x?xi8>,
                                 %global: tensor<1xf32>) -> tensor<?x?xi8> {
  %codes = lowbit.quantize %x scales(%scales : tensor<?x?xi8>)
      global(%global : tensor<1xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e2m1">,
          scale = #lowbit.scale<group(16), tail = true, type = ue4m3,
                                rule = absmax, mode = static,
                                global = decode>,
          packing = nibble>}
      : tensor<?x?xf32> -> tensor<?x?xi8>
  return %codes : tensor<?x?xi8>
}

// int4_g128: asymmetric uint4 nibbles with an f16 scale and a zero point per
// 128 elements (GPTQ/AWQ-style weights, in lowbit's own packing).
func.func @quantize_int4_g128_dynamic(%w: tensor<?x?xf16>)
    -> (tensor<?x?xi8>, tensor<?x?xf16>, tensor<?x?xi8>) {
  %codes, %scales, %zeros = lowbit.quantize %w
      {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<?x?xf16> -> tensor<?x?xi8> scales tensor<?x?xf16>
        zeros tensor<?x?xi8>
  return %codes, %scales, %zeros : tensor<?x?xi8>, tensor<?x?xf16>,
                                   tensor<?x?xi8>
}

// int4_g128 with the scales and zero points passed in.
func.func @quantize_int4_g128_static(%w: tensor<?x?xf16>,
                                     %scales: tensor<?x?xf16>,
                                     %zeros: tensor<?x?xi8>)
    -> tensor<?x?xi8> {
  %codes = lowbit.quantize %w scales(%scales : tensor<?x?xf16>)
      zeros(%zeros : tensor<?x?xi8>)
      {scheme = #lowbit.scheme<format = #lowbit.int<"uint4">,
          scale = #lowbit.scale<group(128), tail = true, type = f16,
                                rule = minmax, mode = static,
                                zero_point = true>,
          packing = nibble>}
      : tensor<?x?xf16> -> tensor<?x?xi8>
  return %codes : tensor<?x?xi8>
}

// int8 with a per-token f32 scale (dynamic activation quantization).
func.func @quantize_int8_per_token(%x: tensor<?x?xbf16>)
    -> (tensor<?x?xi8>, tensor<?x1xf32>) {
  %codes, %scales = lowbit.quantize %x
      {scheme = #lowbit.scheme<format = #lowbit.int<"int8">,
          scale = #lowbit.scale<per_token>, packing = byte>}
      : tensor<?x?xbf16> -> tensor<?x?xi8> scales tensor<?x1xf32>
  return %codes, %scales : tensor<?x?xi8>, tensor<?x1xf32>
}
