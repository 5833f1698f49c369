// lowbit-gpu-relax-atomics: the kernels' LLVM atomics become monotonic at
// device scope (atom.*.gpu), not LLVM's default seq_cst at system scope
// (atom.*.sys with a MEMBAR.SYS); host code is left alone.
//
// RUN: lowbit-opt %s -lowbit-gpu-relax-atomics | FileCheck %s

// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.atomicrmw umax %{{.*}}, %{{.*}} syncscope("device") monotonic : !llvm.ptr, i32
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} syncscope("device") monotonic monotonic : !llvm.ptr, i32
// CHECK-LABEL: llvm.func @host
// CHECK: llvm.atomicrmw umax %{{.*}}, %{{.*}} seq_cst : !llvm.ptr, i32
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%p: !llvm.ptr, %v: i32, %w: i32) {
      %0 = llvm.atomicrmw umax %p, %v seq_cst : !llvm.ptr, i32
      %1 = llvm.cmpxchg %p, %v, %w acq_rel monotonic : !llvm.ptr, i32
      llvm.return
    }
  }
  llvm.func @host(%p: !llvm.ptr, %v: i32) {
    %0 = llvm.atomicrmw umax %p, %v seq_cst : !llvm.ptr, i32
    llvm.return
  }
}
