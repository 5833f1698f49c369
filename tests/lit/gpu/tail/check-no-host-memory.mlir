// lowbit-gpu-check-no-host-memory: a load or store left outside every
// kernel would touch device memory on the host; the tail refuses it.
//
// RUN: lowbit-opt %s -split-input-file -verify-diagnostics -lowbit-gpu-check-no-host-memory | FileCheck %s

// Accesses inside a gpu.launch are the kernels' own.
// CHECK-LABEL: func.func @in_kernel
// CHECK: gpu.launch
// CHECK: memref.load
func.func @in_kernel(%buffer: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %buffer[%tx] : memref<?xf32>
    memref.store %x, %buffer[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @on_host(%buffer: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @below {{the GPU tail does not yet support memory accesses outside scf.parallel that cannot move into a kernel (they would run on the host): memref.load}}
  %x = memref.load %buffer[%c0] : memref<?xf32>
  return %x : f32
}
