// A pair of e4m3 codes decoded natively (one f16x2 cvt): by default the
// codec's NaN (0x7fc00000 with the code's sign) is rebuilt per code; a
// decode marked lowbit.any_nan_bits (decode attention's K and V slices,
// docs/decode-attention.md) keeps the cvt's NaN and has no such fix.
//
// RUN: lowbit-ptx --target=sm_90a %s | FileCheck %s

// CHECK-LABEL: .entry codec_nan_kernel
// CHECK: cvt.rn.f16x2.e4m3x2
// CHECK: setp.nan.f16
// CHECK: or.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2143289344;
// CHECK: ret;
func.func @codec_nan(%in: memref<?xvector<2xi8>>, %out: memref<?xvector<2xf32>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xvector<2xi8>>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %c = memref.load %in[%i] : memref<?xvector<2xi8>>
    %x = lowbit.decode %c {format = #lowbit.float<"e4m3">} : vector<2xi8> to vector<2xf32>
    memref.store %x, %out[%i] : memref<?xvector<2xf32>>
    scf.reduce
  }
  return
}

// CHECK-LABEL: .entry any_nan_kernel
// CHECK: cvt.rn.f16x2.e4m3x2
// CHECK-NOT: setp.nan
// CHECK-NOT: 2143289344
// CHECK: ret;
func.func @any_nan(%in: memref<?xvector<2xi8>>, %out: memref<?xvector<2xf32>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xvector<2xi8>>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %c = memref.load %in[%i] : memref<?xvector<2xi8>>
    %x = lowbit.decode %c {format = #lowbit.float<"e4m3">, lowbit.any_nan_bits} : vector<2xi8> to vector<2xf32>
    memref.store %x, %out[%i] : memref<?xvector<2xf32>>
    scf.reduce
  }
  return
}
