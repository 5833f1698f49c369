// lowbit-to-loops output through the GPU tail: a named scheme's kernel,
// with the native cvt where the chip has one.
//
// RUN: lowbit-opt --lowbit-to-loops %s | lowbit-ptx --target=sm_100a | FileCheck %s --check-prefix=SM100A
// RUN: lowbit-opt --lowbit-to-loops %s | lowbit-ptx --target=sm_90a | FileCheck %s --check-prefix=SM90A
// RUN: lowbit-opt --lowbit-to-loops %s | lowbit-ptx --target=sm_89 | FileCheck %s --check-prefix=SM89

// SM100A-LABEL: .entry mxfp4_quantize_kernel
// SM100A: cvt.rn.satfinite.e2m1x2.f32
// SM90A-LABEL: .entry mxfp4_quantize_kernel
// SM90A-NOT: e2m1x2
func.func @mxfp4_quantize(%x: memref<?x?xf32>, %codes: memref<?x?xi8>,
                          %scales: memref<?x?xi8>) {
  %t = bufferization.to_tensor %x restrict : memref<?x?xf32> to tensor<?x?xf32>
  %c, %s = lowbit.quantize %t {scheme = #lowbit.scheme<"mxfp4">}
      : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %scales
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}

// SM89-LABEL: .entry fp8_static_kernel
// SM89: cvt.rn.satfinite.e4m3x2.f32
func.func @fp8_static(%x: memref<?x?xbf16>, %scale: memref<1x1xf32>,
                      %codes: memref<?x?xi8>) {
  %t = bufferization.to_tensor %x restrict : memref<?x?xbf16> to tensor<?x?xbf16>
  %st = bufferization.to_tensor %scale restrict : memref<1x1xf32> to tensor<1x1xf32>
  %c = lowbit.quantize %t scales(%st : tensor<1x1xf32>)
      {scheme = #lowbit.scheme<format = #lowbit.float<"e4m3">,
          scale = #lowbit.scale<per_tensor, type = f32, rule = absmax,
                                mode = static>,
          packing = byte>}
      : tensor<?x?xbf16> -> tensor<?x?xi8>
  bufferization.materialize_in_destination %c in restrict writable %codes
      : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}
