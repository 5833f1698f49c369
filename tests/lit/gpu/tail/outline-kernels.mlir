// lowbit-gpu-outline-kernels: gpu-kernel-outlining, and a launch's
// requested residency (lowbit.min_blocks_per_sm, kit::requireBlocksPerSm)
// becomes its kernel's nvvm.minctasm; an unmarked launch's kernel gets
// none, and a launch outlined before the pass is left alone.
//
// RUN: lowbit-opt %s -lowbit-gpu-outline-kernels | FileCheck %s
// (`.minnctapersm 3` in the PTX, and the registers it leaves: the test
// report.residency.)

// CHECK: gpu.module @earlier {
// CHECK-NEXT: gpu.func @earlier({{.*}}) kernel {
// CHECK-LABEL: func.func @kernel
// CHECK: gpu.launch_func @earlier::@earlier
// CHECK: gpu.launch_func @kernel_kernel::@kernel_kernel
// CHECK: gpu.launch_func @kernel_kernel_0::@kernel_kernel
// CHECK: gpu.launch_func @kernel_kernel_1::@kernel_kernel
// CHECK-NOT: gpu.launch
// CHECK: gpu.module @kernel_kernel {
// CHECK-NEXT: gpu.func @kernel_kernel({{.*}}) kernel attributes {{{.*}}, nvvm.minctasm = 3 : i32} {
// CHECK: gpu.module @kernel_kernel_0 {
// CHECK-NEXT: gpu.func @kernel_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
// CHECK: gpu.module @kernel_kernel_1 {
// CHECK-NEXT: gpu.func @kernel_kernel({{.*}}) kernel attributes {{{.*}}, nvvm.minctasm = 2 : i32} {
// CHECK-NOT: lowbit.min_blocks_per_sm
module attributes {gpu.container_module} {
  gpu.module @earlier {
    gpu.func @earlier(%out: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @kernel(%out: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %v = arith.constant 1.0 : f32
    gpu.launch_func @earlier::@earlier
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%out : memref<?xf32>)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
        threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      memref.store %v, %out[%tx] : memref<?xf32>
      gpu.terminator
    } {lowbit.min_blocks_per_sm = 3 : i32}
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
        threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      memref.store %v, %out[%tx] : memref<?xf32>
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
        threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      memref.store %v, %out[%tx] : memref<?xf32>
      gpu.terminator
    } {lowbit.min_blocks_per_sm = 2 : i32}
    return
  }
}
