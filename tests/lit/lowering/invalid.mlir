// RUN: lowbit-opt --lowbit-to-loops %s -split-input-file -verify-diagnostics

// Nibble-packed codes cannot tell an odd column count from the next even
// one: a dynamic count must come from a destination memref.
func.func @nibble_dynamic_cols(%codes: tensor<?x?xi8>, %scales: tensor<?x?xi8>)
    -> tensor<?x?xf32> {
  // expected-error @+1 {{needs its result materialized into a destination memref}}
  %x = lowbit.dequantize %codes scales(%scales : tensor<?x?xi8>)
      {scheme = #lowbit.scheme<"mxfp4">} : tensor<?x?xi8> -> tensor<?x?xf32>
  return %x : tensor<?x?xf32>
}

// -----

// The destination does not dominate the op, so it cannot be written in
// place; with a dynamic nibble column count there is nothing else to use.
func.func @late_destination(%codes: tensor<?x?xi8>, %scales: tensor<?x?xi8>,
                            %n: index) {
  // expected-error @+1 {{needs its result materialized into a destination memref}}
  %x = lowbit.dequantize %codes scales(%scales : tensor<?x?xi8>)
      {scheme = #lowbit.scheme<"mxfp4">} : tensor<?x?xi8> -> tensor<?x?xf32>
  %out = memref.alloc(%n, %n) : memref<?x?xf32>
  bufferization.materialize_in_destination %x in restrict writable %out
      : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
  return
}
