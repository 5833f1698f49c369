// The lowering's named pipelines (lowering/Pipelines.h), run by lowbit-opt
// on one kernel in the lowbit dialect: to NVVM for a target given as an
// option, to the LLVM dialect for the host, and each in its two halves.
//
// RUN: lowbit-opt %s -lowbit-to-nvvm=target=sm_90a | FileCheck %s --check-prefixes=NVVM,NVVM90
// RUN: lowbit-opt %s -lowbit-to-nvvm=target=sm_100a | FileCheck %s --check-prefixes=NVVM,NVVM100
// RUN: lowbit-opt %s -lowbit-to-loops-for-gpu | lowbit-opt -lowbit-gpu-tail=target=sm_89+ptx81 | FileCheck %s --check-prefixes=NVVM,NVVM89
// RUN: lowbit-opt %s -lowbit-to-llvm | FileCheck %s --check-prefix=HOST
// RUN: lowbit-opt %s -lowbit-to-loops-for-cpu | lowbit-opt -lowbit-cpu-tail | FileCheck %s --check-prefix=HOST
// RUN: not lowbit-opt %s -lowbit-to-nvvm=target=sm_77 2>&1 | FileCheck %s --check-prefix=BADCHIP
// RUN: not lowbit-opt %s -lowbit-to-nvvm=target=sm_90a+ptx60 2>&1 | FileCheck %s --check-prefix=OLDPTX

// NVVM: module attributes {gpu.container_module}
// NVVM-LABEL: func.func @kernel(
// NVVM: gpu.launch_func {{ *}}@kernel_kernel::@kernel_kernel
// NVVM90: gpu.module @kernel_kernel [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx81">]
// NVVM100: gpu.module @kernel_kernel [#nvvm.target<O = 3, chip = "sm_100a", features = "+ptx86">]
// NVVM89: gpu.module @kernel_kernel [#nvvm.target<O = 3, chip = "sm_89", features = "+ptx81">]
// NVVM-NEXT: llvm.func @kernel_kernel(
// NVVM-SAME: nvvm.kernel
// NVVM: nvvm.read.ptx.sreg.tid.x
// NVVM-NOT: lowbit.

// HOST: llvm.func @kernel(
// HOST-NOT: lowbit.
// HOST-NOT: scf.

// BADCHIP: lowbit-native-cvt: unknown chip 'sm_77'; known: sm_80,
// OLDPTX: lowbit-native-cvt: sm_90a needs PTX >= 8.0; asked for 6.0

func.func @kernel(%arg0: memref<?x?xf32>, %arg1: memref<?x?xi8>, %arg2: memref<?x?xi8>) attributes {llvm.emit_c_interface} {
  %0 = bufferization.to_tensor %arg0 restrict : memref<?x?xf32> to tensor<?x?xf32>
  %codes, %scales = lowbit.quantize %0 {scheme = #lowbit.scheme<"mxfp8">} : tensor<?x?xf32> -> tensor<?x?xi8> scales tensor<?x?xi8>
  bufferization.materialize_in_destination %codes in restrict writable %arg1 : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  bufferization.materialize_in_destination %scales in restrict writable %arg2 : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
  return
}
