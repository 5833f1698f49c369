// lowbit-gpu-wrap-host-stores: a store left on the host (here the scale
// computed from a reduced value) becomes a one-thread scf.parallel, so it
// runs on the device like the rest; stores already inside a loop or a
// gpu.launch stay as they are.
//
// RUN: lowbit-opt %s -lowbit-gpu-wrap-host-stores | FileCheck %s

// CHECK-LABEL: func.func @host_store
// CHECK: %[[SCALE:.*]] = arith.divf
// CHECK: scf.parallel (%{{.*}}) = (%[[C0:.*]]) to (%[[C1:.*]]) step (%[[C1]]) {
// CHECK-NEXT: memref.store %[[SCALE]], %{{.*}}[%{{.*}}] : memref<1xf32>
// CHECK-NEXT: scf.reduce
// CHECK: scf.parallel
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<?xf32>
// CHECK-NEXT: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @host_store(%amax: memref<1xf32>, %scale: memref<1xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %max = arith.constant 448.0 : f32
  %a = memref.load %amax[%c0] : memref<1xf32>
  %s = arith.divf %a, %max : f32
  memref.store %s, %scale[%c0] : memref<1xf32>
  %n = memref.dim %out, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %s, %out[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
