// Which conversions become one cvt instruction on which chip; the rest use
// the codec expansion (plain integer arithmetic, no cvt to an 8-bit type).
//
// RUN: lowbit-ptx --target=sm_80 %s | FileCheck %s --check-prefixes=ALL,SM80
// RUN: lowbit-ptx --target=sm_89 %s | FileCheck %s --check-prefixes=ALL,FP8,NOFP4
// RUN: lowbit-ptx --target=sm_89+ptx78 %s | FileCheck %s --check-prefixes=ALL,SM80
// RUN: lowbit-ptx --target=sm_90a %s | FileCheck %s --check-prefixes=ALL,FP8,NOFP4
// RUN: lowbit-ptx --target=sm_100 %s | FileCheck %s --check-prefixes=ALL,FP8,NOFP4
// RUN: lowbit-ptx --target=sm_100a %s | FileCheck %s --check-prefixes=ALL,FP8,FP4
// RUN: lowbit-ptx --target=sm_120a %s | FileCheck %s --check-prefixes=ALL,FP8,FP4

// ALL-LABEL: .entry encode_e4m3_kernel
// The PTX cvt puts its FIRST source in the HIGH byte: the element goes
// second (low byte, the byte that is stored) and 0.0 first.
// FP8: ld.global.b32 [[X:%r[0-9]+]]
// FP8: mov.b32 [[ZERO:%r[0-9]+]], 0f00000000;
// FP8: cvt.rn.satfinite.e4m3x2.f32 [[PAIR:%rs[0-9]+]], [[ZERO]], [[X]];
// FP8: st.global.b8 [{{%rd[0-9]+}}], [[PAIR]];
// SM80-NOT: cvt.rn.satfinite
// ALL: ret;
func.func @encode_e4m3(%in: memref<?xf32>, %out: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xf32>
    %c = lowbit.encode %x {format = #lowbit.float<"e4m3">} : f32 to i8
    memref.store %c, %out[%i] : memref<?xi8>
    scf.reduce
  }
  return
}

// ALL-LABEL: .entry encode_e5m2_kernel
// FP8: cvt.rn.satfinite.e5m2x2.f32
// SM80-NOT: cvt.rn.satfinite
// ALL: ret;
func.func @encode_e5m2(%in: memref<?xf32>, %out: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xf32>
    %c = lowbit.encode %x {format = #lowbit.float<"e5m2">} : f32 to i8
    memref.store %c, %out[%i] : memref<?xi8>
    scf.reduce
  }
  return
}

// Non-saturating FP8 has no instruction (cvt is .satfinite only).
// ALL-LABEL: .entry encode_e4m3_nosat_kernel
// ALL-NOT: cvt.rn.satfinite
// ALL: ret;
func.func @encode_e4m3_nosat(%in: memref<?xf32>, %out: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xf32>
    %c = lowbit.encode %x {format = #lowbit.float<"e4m3">, saturate = false} : f32 to i8
    memref.store %c, %out[%i] : memref<?xi8>
    scf.reduce
  }
  return
}

// ALL-LABEL: .entry encode_e2m1_kernel
// FP4: cvt.rn.satfinite.e2m1x2.f32
// NOFP4-NOT: e2m1x2
// SM80-NOT: e2m1x2
// ALL: ret;
func.func @encode_e2m1(%in: memref<?xf32>, %out: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xf32>
    %c = lowbit.encode %x {format = #lowbit.float<"e2m1">} : f32 to i8
    memref.store %c, %out[%i] : memref<?xi8>
    scf.reduce
  }
  return
}

// ALL-LABEL: .entry encode_e2m3_kernel
// FP4: cvt.rn.satfinite.e2m3x2.f32
// NOFP4-NOT: e2m3x2
// ALL: ret;
func.func @encode_e2m3(%in: memref<?xf32>, %out: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xf32>
    %c = lowbit.encode %x {format = #lowbit.float<"e2m3">} : f32 to i8
    memref.store %c, %out[%i] : memref<?xi8>
    scf.reduce
  }
  return
}

// ALL-LABEL: .entry encode_e3m2_kernel
// FP4: cvt.rn.satfinite.e3m2x2.f32
// NOFP4-NOT: e3m2x2
// ALL: ret;
func.func @encode_e3m2(%in: memref<?xf32>, %out: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xf32>
    %c = lowbit.encode %x {format = #lowbit.float<"e3m2">} : f32 to i8
    memref.store %c, %out[%i] : memref<?xi8>
    scf.reduce
  }
  return
}

// e8m0 has cvt only with .rz and .rp; .rn uses the codec everywhere.
// ALL-LABEL: .entry encode_e8m0_kernel
// FP4: cvt.rz.satfinite.ue8m0x2.f32
// FP4: cvt.rp.satfinite.ue8m0x2.f32
// NOFP4-NOT: ue8m0x2
// ALL: ret;
func.func @encode_e8m0(%in: memref<?xf32>, %out: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xf32>
    %z = lowbit.encode %x {format = #lowbit.float<"e8m0">, rounding = "rz"} : f32 to i8
    %p = lowbit.encode %x {format = #lowbit.float<"e8m0">, rounding = "rp"} : f32 to i8
    %r = lowbit.encode %x {format = #lowbit.float<"e8m0">} : f32 to i8
    %zp = arith.xori %z, %p : i8
    %all = arith.xori %zp, %r : i8
    memref.store %all, %out[%i] : memref<?xi8>
    scf.reduce
  }
  return
}

// A pair: element 0 must land in the low byte, so it is the SECOND source.
// ALL-LABEL: .entry encode_pair_kernel
// FP8: ld.global.v2.b32 {[[X0:%r[0-9]+]], [[X1:%r[0-9]+]]}
// FP8: cvt.rn.satfinite.e4m3x2.f32 {{%rs[0-9]+}}, [[X1]], [[X0]];
// ALL: ret;
func.func @encode_pair(%in: memref<?xvector<2xf32>>, %out: memref<?xvector<2xi8>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xvector<2xf32>>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xvector<2xf32>>
    %c = lowbit.encode %x {format = #lowbit.float<"e4m3">} : vector<2xf32> to vector<2xi8>
    memref.store %c, %out[%i] : memref<?xvector<2xi8>>
    scf.reduce
  }
  return
}

// ALL-LABEL: .entry decode_e4m3_kernel
// FP8: cvt.rn.f16x2.e4m3x2
// SM80-NOT: e4m3x2
// ALL: ret;
func.func @decode_e4m3(%in: memref<?xi8>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xi8>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %c = memref.load %in[%i] : memref<?xi8>
    %x = lowbit.decode %c {format = #lowbit.float<"e4m3">} : i8 to f32
    memref.store %x, %out[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// ALL-LABEL: .entry decode_e2m1_kernel
// FP4: cvt.rn.f16x2.e2m1x2
// NOFP4-NOT: e2m1x2
// ALL: ret;
func.func @decode_e2m1(%in: memref<?xi8>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xi8>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %c = memref.load %in[%i] : memref<?xi8>
    %x = lowbit.decode %c {format = #lowbit.float<"e2m1">} : i8 to f32
    memref.store %x, %out[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
