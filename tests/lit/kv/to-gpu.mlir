// RUN: lowbit-opt %s --lowbit-to-gpu --canonicalize | FileCheck %s

// lowbit-to-gpu's one-warp-per-row mapping of the KV ops
// (lowering/GpuKvAppend.h); the bits are checked by tests/kvkernels in the
// GPU emulator against kv/KvQuantize.h.

// kv_int8_g64, bf16, head_dim 256: rows * 32 threads in blocks of 256, a
// warp per row (row = block * 8 + thread / 32, lane = thread % 32, with
// the thread's index in its block); 16-byte loads of 8
// values, a group's 8 chunks on 8 lanes combined by xor shuffles 4, 2, 1,
// the scale stored by the group's first lane, 8 codes stored at once; the
// scalar accesses when a base is not aligned.
// CHECK-LABEL: func @append_int8
// CHECK: %[[HEADTOKENS:.*]] = arith.muli %{{.*}}, %c8 : index
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %[[HEADTOKENS]] : index
// CHECK: %[[THREADS:.*]] = arith.muli %[[ROWS]], %c32
// CHECK: arith.addi %[[THREADS]], %c255
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK: %[[WARP:.*]] = arith.divui %[[THREAD:.*]], %c32
// CHECK: %[[FIRSTROW:.*]] = arith.muli %{{.*}}, %c8
// CHECK: %[[ROW:.*]] = arith.addi %[[FIRSTROW]], %[[WARP]]
// CHECK: %[[LANE:.*]] = arith.remui %[[THREAD]], %c32
// CHECK: arith.cmpi ult, %[[ROW]], %[[ROWS]]
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: scf.if
// CHECK: scf.if
// CHECK: arith.divui %[[LANE]], %c8
// CHECK: arith.remui %[[LANE]], %c8
// CHECK: scf.for {{.*}} step %c8 iter_args
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?x8x?x256xbf16>, vector<8xbf16>
// CHECK-COUNT-8: arith.cmpf ogt
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK-NOT: gpu.shuffle
// CHECK: arith.divf %cst{{.*}}, %{{.*}} : f32
// CHECK: scf.if
// CHECK: memref.store %{{.*}} : memref<?x8x?x4xf32>
// CHECK: scf.for
// CHECK: vector.load {{.*}} : memref<?x8x?x256xbf16>, vector<8xbf16>
// CHECK: math.roundeven
// CHECK: vector.store {{.*}} {alignment = 8 : i64} : memref<?x8x?x256xi8>, vector<8xi8>
// CHECK: } else {
// CHECK-NOT: vector.load
// CHECK: memref.load {{.*}} : memref<?x8x?x256xbf16>
// CHECK: gpu.shuffle  xor
// CHECK: memref.store {{.*}} : memref<?x8x?x256xi8>
// CHECK: gpu.terminator
func.func @append_int8(%k: memref<?x8x?x256xbf16>,
    %codes: memref<?x8x?x256xi8>, %scales: memref<?x8x?x4xf32>,
    %pos: memref<?xi32>) {
  lowbit.kv_append %k into %codes, %scales at %pos
      {scheme = "kv_int8_g64", convention = "multiplier"}
      : memref<?x8x?x256xbf16>, memref<?x8x?x256xi8>,
        memref<?x8x?x4xf32>, memref<?xi32>
  return
}

// Paged kv_fp8, head_dim 128: the block table read once per row, 32
// chunks of 4 (8-byte loads, so that no lane idles), x2 encodes of x /
// scale[head] through the row's shared divisor (one reciprocal before the
// chunk loop, fmas and no division in it), 4 codes stored at once, no
// shuffles.
// CHECK-LABEL: func @append_fp8_paged
// CHECK: gpu.launch
// CHECK: arith.divsi %{{.*}}, %c16
// CHECK: memref.load %{{.*}} : memref<?x?xi32>
// CHECK-NOT: memref<?x?xi32>
// CHECK: memref.load %{{.*}} : memref<8xf32>
// CHECK: arith.divf %cst{{.*}}, %{{.*}} : f32
// CHECK: scf.for {{.*}} step %c32
// CHECK: vector.load {{.*}} {alignment = 8 : i64} : memref<?x8x?x128xf16>, vector<4xf16>
// CHECK-NOT: arith.divf
// CHECK: math.fma
// CHECK-NOT: arith.divf
// CHECK: lowbit.encode %{{.*}} {format = #lowbit.float<"e4m3">} : vector<2xf32> to vector<2xi8>
// CHECK-NOT: arith.divf
// CHECK: vector.store {{.*}} {alignment = 4 : i64} : memref<?x8x16x128xi8>, vector<4xi8>
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.terminator
func.func @append_fp8_paged(%k: memref<?x8x?x128xf16>,
    %codes: memref<?x8x16x128xi8>, %scales: memref<8xf32>,
    %pos: memref<?xi32>, %table: memref<?x?xi32>) {
  lowbit.kv_append %k into %codes, %scales at %pos table %table
      {scheme = "kv_fp8_e4m3", per_head}
      : memref<?x8x?x128xf16>, memref<?x8x16x128xi8>, memref<8xf32>,
        memref<?xi32>, memref<?x?xi32>
  return
}

// Dequantize to f32, head_dim 128: chunks of 4 (16-byte stores), the
// group scale loaded per chunk, q / s; rows outside the cache are zeros.
// CHECK-LABEL: func @dequantize_int8
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} step %c32
// CHECK: vector.load {{.*}} {alignment = 4 : i64} : memref<?x8x?x128xi8>, vector<4xi8>
// CHECK: memref.load %{{.*}} : memref<?x8x?x2xf32>
// CHECK: arith.sitofp
// CHECK: arith.divf
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x8x?x128xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: vector.store %cst{{.*}} : memref<?x8x?x128xf32>, vector<4xf32>
func.func @dequantize_int8(%codes: memref<?x8x?x128xi8>,
    %scales: memref<?x8x?x2xf32>, %pos: memref<?xi32>,
    %out: memref<?x8x?x128xf32>) {
  lowbit.kv_dequantize %codes, %scales at %pos into %out
      {scheme = "kv_int8_g64", convention = "multiplier"}
      : memref<?x8x?x128xi8>, memref<?x8x?x2xf32>, memref<?xi32>,
        memref<?x8x?x128xf32>
  return
}

// A dynamic head_dim is left to lowbit-kv-to-loops.
// CHECK-LABEL: func @dynamic_head_dim
// CHECK-NOT: gpu.launch
// CHECK: lowbit.kv_append
func.func @dynamic_head_dim(%k: memref<?x8x?x?xf16>,
    %codes: memref<?x8x?x?xi8>, %scales: memref<8xf32>,
    %pos: memref<?xi32>) {
  lowbit.kv_append %k into %codes, %scales at %pos
      {scheme = "kv_fp8_e5m2", per_head}
      : memref<?x8x?x?xf16>, memref<?x8x?x?xi8>, memref<8xf32>,
        memref<?xi32>
  return
}
