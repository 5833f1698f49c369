// lowbit-gpu-expand-libdevice-math: f32 math.absf, math.copysign and
// math.roundeven (scalar or vector) become integer and f32 arithmetic, so
// convert-gpu-to-nvvm has no libdevice call to emit; other types stay.
//
// RUN: lowbit-opt %s -lowbit-gpu-expand-libdevice-math | FileCheck %s

// CHECK-LABEL: func.func @absf
// CHECK-NOT: math.absf
// CHECK: %[[BITS:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK: %[[MASK:.*]] = arith.constant 2147483647 : i32
// CHECK: %[[MAG:.*]] = arith.andi %[[BITS]], %[[MASK]] : i32
// CHECK: arith.bitcast %[[MAG]] : i32 to f32
func.func @absf(%x: f32) -> f32 {
  %a = math.absf %x : f32
  return %a : f32
}

// CHECK-LABEL: func.func @copysign
// CHECK-NOT: math.copysign
// CHECK: arith.constant dense<-2147483648> : vector<2xi32>
// CHECK: arith.ori
func.func @copysign(%x: vector<2xf32>, %y: vector<2xf32>) -> vector<2xf32> {
  %c = math.copysign %x, %y : vector<2xf32>
  return %c : vector<2xf32>
}

// (|x| + 2^23) - 2^23 rounds with ties to even; |x| >= 2^23 (0x4b000000)
// is integral already.
// CHECK-LABEL: func.func @roundeven
// CHECK-NOT: math.roundeven
// CHECK: arith.addf
// CHECK: arith.subf
// CHECK: arith.cmpi uge, %{{.*}}, %{{.*}} : i32
// CHECK: arith.select
func.func @roundeven(%x: f32) -> f32 {
  %r = math.roundeven %x : f32
  return %r : f32
}

// CHECK-LABEL: func.func @f16_stays
// CHECK: math.absf %{{.*}} : f16
func.func @f16_stays(%x: f16) -> f16 {
  %a = math.absf %x : f16
  return %a : f16
}
