//===- HandWrittenKernels.h - gpu dialect kernels for the emulator -*- C++ -*-===//
//
// Each module has a host function @kernel (the plan's entry: sizes from
// memref.dim of its parameters) and a gpu.module. Every buffer is a 1xN
// memref<?x?xi32>.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_EMULATOR_HANDWRITTENKERNELS_H
#define LOWBIT_TESTS_EMULATOR_HANDWRITTENKERNELS_H

namespace lowbit::testing {

/// sums[w] = sum of the 32 inputs of warp w (xor 16, xor 8, then down 4, 2,
/// 1); prefix[i] = inclusive prefix sum within the warp (up 1..16, adding
/// only where the shuffle's valid bit is set). Blocks of 64 threads.
inline constexpr const char *kWarpShuffleKernels = R"mlir(
module attributes {gpu.container_module} {
  func.func @kernel(%in: memref<?x?xi32>, %sums: memref<?x?xi32>,
                    %prefix: memref<?x?xi32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %warps = memref.dim %sums, %c1 : memref<?x?xi32>
    %blocks = arith.divui %warps, %c2 : index
    gpu.launch_func @kernels::@warp_sums blocks in (%blocks, %c1, %c1)
        threads in (%c64, %c1, %c1)
        args(%in : memref<?x?xi32>, %sums : memref<?x?xi32>)
    gpu.launch_func @kernels::@warp_prefix blocks in (%blocks, %c1, %c1)
        threads in (%c64, %c1, %c1)
        args(%in : memref<?x?xi32>, %prefix : memref<?x?xi32>)
    return
  }
  gpu.module @kernels {
    gpu.func @warp_sums(%in: memref<?x?xi32>, %out: memref<?x?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %base = arith.muli %bid, %c64 : index
      %i = arith.addi %base, %tid : index
      %v0 = memref.load %in[%c0, %i] : memref<?x?xi32>
      %width = arith.constant 32 : i32
      %o16 = arith.constant 16 : i32
      %o8 = arith.constant 8 : i32
      %o4 = arith.constant 4 : i32
      %o2 = arith.constant 2 : i32
      %o1 = arith.constant 1 : i32
      %s16, %p16 = gpu.shuffle xor %v0, %o16, %width : i32
      %v1 = arith.addi %v0, %s16 : i32
      %s8, %p8 = gpu.shuffle xor %v1, %o8, %width : i32
      %v2 = arith.addi %v1, %s8 : i32
      %s4, %p4 = gpu.shuffle down %v2, %o4, %width : i32
      %v3 = arith.addi %v2, %s4 : i32
      %s2, %p2 = gpu.shuffle down %v3, %o2, %width : i32
      %v4 = arith.addi %v3, %s2 : i32
      %s1, %p1 = gpu.shuffle down %v4, %o1, %width : i32
      %v5 = arith.addi %v4, %s1 : i32
      %lane = arith.remui %tid, %c32 : index
      %warp = arith.divui %i, %c32 : index
      %first = arith.cmpi eq, %lane, %c0 : index
      scf.if %first {
        memref.store %v5, %out[%c0, %warp] : memref<?x?xi32>
      }
      gpu.return
    }
    gpu.func @warp_prefix(%in: memref<?x?xi32>, %out: memref<?x?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %base = arith.muli %bid, %c64 : index
      %i = arith.addi %base, %tid : index
      %v0 = memref.load %in[%c0, %i] : memref<?x?xi32>
      %width = arith.constant 32 : i32
      %o1 = arith.constant 1 : i32
      %o2 = arith.constant 2 : i32
      %o4 = arith.constant 4 : i32
      %o8 = arith.constant 8 : i32
      %o16 = arith.constant 16 : i32
      %s1, %p1 = gpu.shuffle up %v0, %o1, %width : i32
      %a1 = arith.addi %v0, %s1 : i32
      %v1 = arith.select %p1, %a1, %v0 : i32
      %s2, %p2 = gpu.shuffle up %v1, %o2, %width : i32
      %a2 = arith.addi %v1, %s2 : i32
      %v2 = arith.select %p2, %a2, %v1 : i32
      %s4, %p4 = gpu.shuffle up %v2, %o4, %width : i32
      %a4 = arith.addi %v2, %s4 : i32
      %v3 = arith.select %p4, %a4, %v2 : i32
      %s8, %p8 = gpu.shuffle up %v3, %o8, %width : i32
      %a8 = arith.addi %v3, %s8 : i32
      %v4 = arith.select %p8, %a8, %v3 : i32
      %s16, %p16 = gpu.shuffle up %v4, %o16, %width : i32
      %a16 = arith.addi %v4, %s16 : i32
      %v5 = arith.select %p16, %a16, %v4 : i32
      memref.store %v5, %out[%c0, %i] : memref<?x?xi32>
      gpu.return
    }
  }
}
)mlir";

/// sums[b] = sum of block b's 128 inputs: a tree in shared memory, one
/// barrier after the stores and one after each of the 7 halving steps.
inline constexpr const char *kSharedReductionKernel = R"mlir(
module attributes {gpu.container_module} {
  func.func @kernel(%in: memref<?x?xi32>, %sums: memref<?x?xi32>) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %blocks = memref.dim %sums, %c1 : memref<?x?xi32>
    gpu.launch_func @kernels::@block_sums blocks in (%blocks, %c1, %c1)
        threads in (%c128, %c1, %c1)
        args(%in : memref<?x?xi32>, %sums : memref<?x?xi32>)
    return
  }
  gpu.module @kernels {
    gpu.func @block_sums(%in: memref<?x?xi32>, %out: memref<?x?xi32>)
        workgroup(%scratch : memref<128xi32, #gpu.address_space<workgroup>>)
        kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c7 = arith.constant 7 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %base = arith.muli %bid, %c128 : index
      %i = arith.addi %base, %tid : index
      %v = memref.load %in[%c0, %i] : memref<?x?xi32>
      memref.store %v, %scratch[%tid]
          : memref<128xi32, #gpu.address_space<workgroup>>
      gpu.barrier
      scf.for %k = %c0 to %c7 step %c1 {
        %stride = arith.shrui %c64, %k : index
        %active = arith.cmpi ult, %tid, %stride : index
        scf.if %active {
          %j = arith.addi %tid, %stride : index
          %a = memref.load %scratch[%tid]
              : memref<128xi32, #gpu.address_space<workgroup>>
          %b = memref.load %scratch[%j]
              : memref<128xi32, #gpu.address_space<workgroup>>
          %s = arith.addi %a, %b : i32
          memref.store %s, %scratch[%tid]
              : memref<128xi32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %total = memref.load %scratch[%c0]
            : memref<128xi32, #gpu.address_space<workgroup>>
        memref.store %total, %out[%c0, %bid] : memref<?x?xi32>
      }
      gpu.return
    }
  }
}
)mlir";

/// totals[0] += every input, totals[1] = max(totals[1], every input), with
/// one atomic per thread; 96-thread blocks, the last one partly idle.
inline constexpr const char *kAtomicKernel = R"mlir(
module attributes {gpu.container_module} {
  func.func @kernel(%in: memref<?x?xi32>, %totals: memref<?x?xi32>) {
    %c1 = arith.constant 1 : index
    %c96 = arith.constant 96 : index
    %n = memref.dim %in, %c1 : memref<?x?xi32>
    %blocks = arith.ceildivui %n, %c96 : index
    gpu.launch_func @kernels::@atomic_totals blocks in (%blocks, %c1, %c1)
        threads in (%c96, %c1, %c1)
        args(%in : memref<?x?xi32>, %totals : memref<?x?xi32>)
    return
  }
  gpu.module @kernels {
    gpu.func @atomic_totals(%in: memref<?x?xi32>, %out: memref<?x?xi32>)
        kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %n = memref.dim %in, %c1 : memref<?x?xi32>
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %v = memref.load %in[%c0, %i] : memref<?x?xi32>
        %a = memref.atomic_rmw addi %v, %out[%c0, %c0]
            : (i32, memref<?x?xi32>) -> i32
        %m = memref.atomic_rmw maxs %v, %out[%c0, %c1]
            : (i32, memref<?x?xi32>) -> i32
      }
      gpu.return
    }
  }
}
)mlir";

// The violations. Each runs one 128-thread block over in/out of 128 i32.
#define LOWBIT_ONE_BLOCK_HOST(KERNEL, THREADS)                                 \
  "module attributes {gpu.container_module} {\n"                               \
  "  func.func @kernel(%in: memref<?x?xi32>, %out: memref<?x?xi32>) {\n"       \
  "    %c1 = arith.constant 1 : index\n"                                       \
  "    %threads = arith.constant " THREADS " : index\n"                        \
  "    gpu.launch_func @kernels::@" KERNEL " blocks in (%c1, %c1, %c1)\n"      \
  "        threads in (%threads, %c1, %c1)\n"                                  \
  "        args(%in : memref<?x?xi32>, %out : memref<?x?xi32>)\n"              \
  "    return\n"                                                               \
  "  }\n"

/// Threads 0-15 wait at a barrier the others never reach.
inline constexpr const char *kDivergentBarrierKernel =
    LOWBIT_ONE_BLOCK_HOST("divergent", "128") R"mlir(
  gpu.module @kernels {
    gpu.func @divergent(%in: memref<?x?xi32>, %out: memref<?x?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %tid = gpu.thread_id x
      %low = arith.cmpi ult, %tid, %c16 : index
      scf.if %low {
        gpu.barrier
      }
      %v = memref.load %in[%c0, %tid] : memref<?x?xi32>
      memref.store %v, %out[%c0, %tid] : memref<?x?xi32>
      gpu.return
    }
  }
}
)mlir";

/// Lanes 0-15 shuffle with a full mask; lanes 16-31 have returned.
inline constexpr const char *kShuffleAfterExitKernel =
    LOWBIT_ONE_BLOCK_HOST("after_exit", "32") R"mlir(
  gpu.module @kernels {
    gpu.func @after_exit(%in: memref<?x?xi32>, %out: memref<?x?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %tid = gpu.thread_id x
      %low = arith.cmpi ult, %tid, %c16 : index
      scf.if %low {
        %v = memref.load %in[%c0, %tid] : memref<?x?xi32>
        %o1 = arith.constant 1 : i32
        %w = arith.constant 32 : i32
        %s, %p = gpu.shuffle xor %v, %o1, %w : i32
        memref.store %s, %out[%c0, %tid] : memref<?x?xi32>
      }
      gpu.return
    }
  }
}
)mlir";

/// A full-warp shuffle in a 48-thread block: lanes 16-31 of the second
/// warp do not exist.
inline constexpr const char *kPartialWarpShuffleKernel =
    LOWBIT_ONE_BLOCK_HOST("partial_warp", "48") R"mlir(
  gpu.module @kernels {
    gpu.func @partial_warp(%in: memref<?x?xi32>, %out: memref<?x?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      %v = memref.load %in[%c0, %tid] : memref<?x?xi32>
      %o1 = arith.constant 1 : i32
      %w = arith.constant 32 : i32
      %s, %p = gpu.shuffle xor %v, %o1, %w : i32
      memref.store %s, %out[%c0, %tid] : memref<?x?xi32>
      gpu.return
    }
  }
}
)mlir";

/// Thread t stores to out[t + 1]: the last one is past the end.
inline constexpr const char *kOutOfBoundsKernel =
    LOWBIT_ONE_BLOCK_HOST("past_end", "128") R"mlir(
  gpu.module @kernels {
    gpu.func @past_end(%in: memref<?x?xi32>, %out: memref<?x?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %tid = gpu.thread_id x
      %next = arith.addi %tid, %c1 : index
      %v = memref.load %in[%c0, %tid] : memref<?x?xi32>
      memref.store %v, %out[%c0, %next] : memref<?x?xi32>
      gpu.return
    }
  }
}
)mlir";

/// Writes the input buffer.
inline constexpr const char *kStoreToInputKernel =
    LOWBIT_ONE_BLOCK_HOST("to_input", "128") R"mlir(
  gpu.module @kernels {
    gpu.func @to_input(%in: memref<?x?xi32>, %out: memref<?x?xi32>) kernel {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      %v = memref.load %out[%c0, %tid] : memref<?x?xi32>
      memref.store %v, %in[%c0, %tid] : memref<?x?xi32>
      gpu.return
    }
  }
}
)mlir";

/// Each thread reads its neighbour's shared slot with no barrier between
/// the neighbour's store and the read.
inline constexpr const char *kSharedRaceKernel =
    LOWBIT_ONE_BLOCK_HOST("racy", "128") R"mlir(
  gpu.module @kernels {
    gpu.func @racy(%in: memref<?x?xi32>, %out: memref<?x?xi32>)
        workgroup(%scratch : memref<128xi32, #gpu.address_space<workgroup>>)
        kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c127 = arith.constant 127 : index
      %tid = gpu.thread_id x
      %v = memref.load %in[%c0, %tid] : memref<?x?xi32>
      memref.store %v, %scratch[%tid]
          : memref<128xi32, #gpu.address_space<workgroup>>
      %next = arith.addi %tid, %c1 : index
      %wrapped = arith.andi %next, %c127 : index
      %n = memref.load %scratch[%wrapped]
          : memref<128xi32, #gpu.address_space<workgroup>>
      memref.store %n, %out[%c0, %tid] : memref<?x?xi32>
      gpu.return
    }
  }
}
)mlir";

#undef LOWBIT_ONE_BLOCK_HOST

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_EMULATOR_HANDWRITTENKERNELS_H
