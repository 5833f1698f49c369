// Requests that would make LLVM abort are refused (or fall back to the
// codec) before any codegen.
//
// RUN: not lowbit-ptx --target=sm_90a+ptx60 %s 2>&1 | FileCheck %s --check-prefix=OLDPTX
// OLDPTX: lowbit-ptx: sm_90a needs PTX >= 8.0; asked for 6.0
//
// RUN: not lowbit-ptx --target=sm_100a+ptx80 %s 2>&1 | FileCheck %s --check-prefix=OLDPTX100
// OLDPTX100: lowbit-ptx: sm_100a needs PTX >= 8.6; asked for 8.0
//
// RUN: not lowbit-ptx --target=sm_77 %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: lowbit-ptx: unknown target 'sm_77'; known: cpu, sm_80,
//
// RUN: not lowbit-ptx --target=sm_90a+ptx99 %s 2>&1 | FileCheck %s --check-prefix=NEWPTX
// NEWPTX: PTX 9.9 is newer than LLVM 22 can emit (<= 9.0)
//
// FP8 cvt on sm_89 needs PTX 8.1 in LLVM 22: with 7.8 the codec is used.
// RUN: lowbit-ptx --target=sm_89+ptx78 %s | FileCheck %s --check-prefix=CODEC
// CODEC: .version 7.8
// CODEC-NOT: cvt.rn.satfinite
//
// e2m1 and e8m0 on H100/H200 (sm_90a) and on plain sm_100: the codec.
// RUN: lowbit-ptx --target=sm_90a %s | FileCheck %s --check-prefix=NOFP4
// RUN: lowbit-ptx --target=sm_100 %s | FileCheck %s --check-prefix=NOFP4
// NOFP4-NOT: e2m1x2
// NOFP4-NOT: ue8m0x2
//
// RUN: lowbit-ptx --list-native --target=sm_90a | FileCheck %s --check-prefix=LIST90
// LIST90: sm_90a+ptx81
// LIST90-NEXT: e4m3 encode: cvt.rn.satfinite.e4m3x2.f32
// LIST90-NOT: e2m1
//
// RUN: lowbit-ptx --list-native --target=sm_120a | FileCheck %s --check-prefix=LIST120
// LIST120: e2m1 encode: cvt.rn.satfinite.e2m1x2.f32
// LIST120: e8m0 encode: cvt.rz.satfinite.ue8m0x2.f32

func.func @convert(%in: memref<?xf32>, %out: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %in[%i] : memref<?xf32>
    %a = lowbit.encode %x {format = #lowbit.float<"e4m3">} : f32 to i8
    %b = lowbit.encode %x {format = #lowbit.float<"e2m1">} : f32 to i8
    %c = lowbit.encode %x {format = #lowbit.float<"e8m0">, rounding = "rz"} : f32 to i8
    %ab = arith.xori %a, %b : i8
    %abc = arith.xori %ab, %c : i8
    memref.store %abc, %out[%i] : memref<?xi8>
    scf.reduce
  }
  return
}
