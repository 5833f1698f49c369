// lowbit-gpu-merge-modules: gpu-kernel-outlining's one gpu.module per
// kernel becomes one gpu.module (the runtime loads one PTX module per
// compile); each kernel takes its module's unique name, a device global
// copied into every module is kept once, and the launches follow.
//
// RUN: lowbit-opt %s -lowbit-gpu-merge-modules | FileCheck %s

// CHECK: gpu.module @kernel_kernel {
// CHECK-NEXT: memref.global "private" @lowbit_reduction_0
// CHECK-NOT: memref.global
// CHECK: gpu.func @kernel_kernel(
// CHECK: gpu.func @kernel_kernel_0(
// CHECK: }
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @kernel
// CHECK: gpu.launch_func @kernel_kernel::@kernel_kernel
// CHECK: gpu.launch_func @kernel_kernel::@kernel_kernel_0
module attributes {gpu.container_module} {
  gpu.module @kernel_kernel {
    memref.global "private" @lowbit_reduction_0 : memref<1xi32>
    gpu.func @kernel_kernel(%out: memref<?xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @kernel_kernel_0 {
    memref.global "private" @lowbit_reduction_0 : memref<1xi32>
    gpu.func @kernel_kernel(%out: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @kernel(%out: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernel_kernel::@kernel_kernel
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%out : memref<?xf32>)
    gpu.launch_func @kernel_kernel_0::@kernel_kernel
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%out : memref<?xf32>)
    return
  }
}
