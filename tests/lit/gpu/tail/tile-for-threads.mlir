// lowbit-gpu-tile-for-threads: each outermost scf.parallel becomes blocks
// of `threads-per-block` threads along its innermost dimension (128 by
// default, the GPU tail's kThreadsPerBlock); a bound that does not divide
// is guarded with scf.if, so every block keeps the same thread count.
//
// RUN: lowbit-opt %s -lowbit-gpu-tile-for-threads | FileCheck %s --check-prefixes=CHECK,T128
// RUN: lowbit-opt %s -lowbit-gpu-tile-for-threads=threads-per-block=32 | FileCheck %s --check-prefixes=CHECK,T32

// CHECK-LABEL: func.func @rows
// T128: %[[TILE:.*]] = arith.constant 128 : index
// T32: %[[TILE:.*]] = arith.constant 32 : index
// CHECK: %[[STEP:.*]] = arith.muli %{{.*}}, %[[TILE]] : index
// The block loop steps by one row and a tile of columns ...
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to ({{.*}}) step (%{{.*}}, %[[STEP]]) {
// ... and the thread loop covers the tile, guarded where it ends.
// CHECK-NEXT: scf.parallel ({{.*}}) = ({{.*}}) to (%{{.*}}, %[[STEP]]) step
// CHECK: arith.cmpi ult
// CHECK: scf.if
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @rows(%in: memref<?x?xf32>, %out: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %in, %c0 : memref<?x?xf32>
  %cols = memref.dim %in, %c1 : memref<?x?xf32>
  scf.parallel (%r, %c) = (%c0, %c0) to (%rows, %cols) step (%c1, %c1) {
    %x = memref.load %in[%r, %c] : memref<?x?xf32>
    memref.store %x, %out[%r, %c] : memref<?x?xf32>
    scf.reduce
  }
  return
}
