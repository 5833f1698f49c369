// lowbit-gpu-reductions-to-atomics: a dynamic per-tensor amax (an
// scf.parallel reduction) becomes an init loop storing into a device
// global, the loop folding into it with an atomic whose body is the
// scf.reduce region, and a load of the global in place of the result.
//
// RUN: lowbit-opt %s -split-input-file -verify-diagnostics -lowbit-gpu-reductions-to-atomics | FileCheck %s

// CHECK: memref.global "private" @lowbit_reduction_0 : memref<1xi32>
// CHECK-LABEL: func.func @amax
// The init: one thread stores the init value's bits.
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to ([[ONE:%[a-z0-9_]+]]) step ([[ONE]]) {
// CHECK-NEXT: memref.get_global @lowbit_reduction_0
// CHECK-NEXT: arith.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT: memref.store
// The loop folds each value into the global: compare-and-swap on the GPU.
// CHECK: scf.parallel
// CHECK: math.absf
// CHECK: memref.generic_atomic_rmw
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.maximumf
// CHECK: memref.atomic_yield
// The result is the global's value after the loop.
// CHECK: memref.get_global @lowbit_reduction_0
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.bitcast %{{.*}} : i32 to f32
// CHECK-NOT: scf.reduce
func.func @amax(%in: memref<?xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %in, %c0 : memref<?xf32>
  %amax = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %x = memref.load %in[%i] : memref<?xf32>
    %a = math.absf %x : f32
    scf.reduce(%a : f32) {
    ^bb0(%lhs: f32, %rhs: f32):
      %m = arith.maximumf %lhs, %rhs : f32
      scf.reduce.return %m : f32
    }
  }
  memref.store %amax, %out[%c0] : memref<1xf32>
  return
}

// -----

func.func @nested(%in: memref<?x?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %in, %c0 : memref<?x?xf32>
  %cols = memref.dim %in, %c1 : memref<?x?xf32>
  scf.parallel (%r) = (%c0) to (%rows) step (%c1) {
    // expected-error @below {{the GPU tail does not yet support a reduction nested in another scf.parallel}}
    %m = scf.parallel (%c) = (%c0) to (%cols) step (%c1) init (%zero) -> f32 {
      %x = memref.load %in[%r, %c] : memref<?x?xf32>
      scf.reduce(%x : f32) {
      ^bb0(%lhs: f32, %rhs: f32):
        %s = arith.maximumf %lhs, %rhs : f32
        scf.reduce.return %s : f32
      }
    }
    memref.store %m, %out[%r] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

func.func @wide(%in: memref<?xf64>, %out: memref<1xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %n = memref.dim %in, %c0 : memref<?xf64>
  // expected-error @below {{the GPU tail reduces only 32-bit scalars}}
  %m = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f64 {
    %x = memref.load %in[%i] : memref<?xf64>
    scf.reduce(%x : f64) {
    ^bb0(%lhs: f64, %rhs: f64):
      %s = arith.maximumf %lhs, %rhs : f64
      scf.reduce.return %s : f64
    }
  }
  memref.store %m, %out[%c0] : memref<1xf64>
  return
}
