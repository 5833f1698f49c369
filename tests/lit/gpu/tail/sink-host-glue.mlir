// lowbit-gpu-sink-host-glue: a launch that uses a value loaded on the host
// (NVFP4's global scale, a reduction's global) gets the load, and the pure
// arithmetic between it and the kernel, cloned into its body; the host
// originals are erased once dead.
//
// RUN: lowbit-opt %s -lowbit-gpu-sink-host-glue | FileCheck %s

// CHECK-LABEL: func.func @scale_from_global
// CHECK-NOT: memref.load
// CHECK: gpu.launch
// CHECK: %[[G:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<1xf32>
// CHECK: %[[S:.*]] = arith.mulf %[[G]], %{{.*}} : f32
// CHECK: memref.store %[[S]]
// CHECK: gpu.terminator
func.func @scale_from_global(%global: memref<1xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %six = arith.constant 6.0 : f32
  %g = memref.load %global[%c0] : memref<1xf32>
  %s = arith.mulf %g, %six : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %s, %out[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}
