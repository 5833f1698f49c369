// Dequantize kernel templates, the inverses of quantize.mlir. The logical
// column count comes from the result type: nibble-packed codes of an odd
// column count have the same byte count as the next even one.

func.func @dequantize_fp8_e4m3(%codes: tensor<?x?xi8>, %scale: tensor<1x1xf32>)
    -> tensor<?x?xbf16> {
  %x = lowbit.dequantize %codes scales(%scale : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<"fp8_e4m3">}
      : tensor<?x?xi8> -> tensor<?x?xbf16>
  return %x : tensor<?x?xbf16>
}

// The static-scale scheme of quantize_fp8_e4m3_static dequantizes alike.
func.func @dequantize_fp8_e4m3_static(%codes: tensor<?x?xi8>,
                                      %scale: tensor<1x1xf32>)
    -> tensor<?x?xf32> {
  %x = lowbit.dequantize %codes scales(%scale : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<per_tensor, mode = static>, packing = byte>}
      : tensor<?x?xi8> -> tensor<?x?xf32>
  return %x : tensor<?x?xf32>
}

func.func @dequantize_mxfp4(%codes: tensor<?x?xi8>, %scales: tensor<?x?xi8>)
    -> tensor<?x?xf32> {
  %x = lowbit.dequantize %codes scales(%scales : tensor<?x?xi8>)
      {scheme = #lowbit.scheme<"mxfp4">} : tensor<?x?xi8> -> tensor<?x?xf32>
  return %x : tensor<?x?xf32>
}

func.func @dequantize_nvfp4(%codes: tensor<?x?xi8>, %scales: tensor<?x?xi8>,
                            %global: tensor<1xf32>) -> tensor<?x?xf16> {
  %x = lowbit.dequantize %codes scales(%scales : tensor<?x?xi8>)
      global(%global : tensor<1xf32>) {scheme = #lowbit.scheme<"nvfp4">}
      : tensor<?x?xi8> -> tensor<?x?xf16>
  return %x : tensor<?x?xf16>
}

func.func @dequantize_int4_g128(%codes: tensor<?x?xi8>,
                                %scales: tensor<?x?xf16>,
                                %zeros: tensor<?x?xi8>) -> tensor<?x?xf16> {
  %w = lowbit.dequantize %codes scales(%scales : tensor<?x?xf16>)
      zeros(%zeros : tensor<?x?xi8>) {scheme = #lowbit.scheme<"int4_g128">}
      : tensor<?x?xi8> -> tensor<?x?xf16>
  return %w : tensor<?x?xf16>
}

// A fixed shape: 4096 columns of MXFP8 have 128 e8m0 scales per row.
func.func @dequantize_mxfp8_4096(%codes: tensor<?x4096xi8>,
                                 %scales: tensor<?x128xi8>)
    -> tensor<?x4096xbf16> {
  %x = lowbit.dequantize %codes scales(%scales : tensor<?x128xi8>)
      {scheme = #lowbit.scheme<"mxfp8">}
      : tensor<?x4096xi8> -> tensor<?x4096xbf16>
  return %x : tensor<?x4096xbf16>
}
