// lowbit-gpu-align-workgroup: every workgroup buffer of a kernel gets a
// 16-byte alignment (16-byte cp.async and ldmatrix need it; the NVVM
// lowering would give an i8 buffer `.align 1`); a larger one is kept, and
// private buffers are left alone.
//
// (tests/lit/fusion/compile.test checks the PTX: `.shared .align 16`.)
//
// RUN: lowbit-opt %s -lowbit-gpu-align-workgroup | FileCheck %s

// CHECK-LABEL: gpu.func @tiles
// CHECK-SAME: workgroup(%{{.*}} : memref<80xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<40xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
// CHECK-SAME: private(%{{.*}} : memref<2xi8, #gpu.address_space<private>>)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @tiles()
        workgroup(%codes : memref<80xi8, #gpu.address_space<workgroup>>,
                  %x : memref<40xf16, #gpu.address_space<workgroup>>,
                  %wide : memref<4xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
        private(%scratch : memref<2xi8, #gpu.address_space<private>>)
        kernel {
      gpu.return
    }
  }
}
