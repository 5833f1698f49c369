//===- MmaKernels.cpp - Hand-written nvvm.mma.sync kernels ----------------===//
//
// Addresses, from PTX ISA 9.7.14.5.8 ("Matrix Fragments for mma.m16n8k16
// with floating point type"; 9.7.14.5.7 for m16n8k8), with g = lane >> 2
// and t = lane % 4 and W = K / 2 words per row of A and of B^T:
//   A register r holds (row g + 8 (r & 1), cols 2t + 8 (r >> 1) and +1):
//     word (g + 8 (r & 1)) W + t + 4 (r >> 1)
//   B register r holds (rows 2t + 8r and +1, col g): word g W + t + 4r
// and for the 8-bit m16n8k32 (9.7.14.5.10), four elements a register and
// W = K / 4, the same words:
//   A register r holds (row g + 8 (r & 1), cols 4t + 16 (r >> 1) .. +3)
//   B register r holds (rows 4t + 16r .. +3, col g)
//   C/D element i is (row g + 8 (i >> 1), col 2t + (i & 1)):
//     word (g + 8 (i >> 1)) 8 + 2t + (i & 1)
//
//===----------------------------------------------------------------------===//

#include "tests/emulator/MmaKernels.h"

#include <sstream>
#include <utility>
#include <vector>

namespace lowbit::testing {

std::string mmaKernelText(const MmaKernelVariant &v) {
  using Bytes = MmaKernelVariant::Bytes;
  const bool bytes = v.bytes != Bytes::None;
  const bool integer = v.integer();
  auto typeName = [](Bytes type) {
    static const char *const names[] = {"", "e4m3", "e5m2", "s8", "u8"};
    return names[int(type)];
  };
  const int words = bytes ? v.k / 4 : v.k / 2; // per row of A and of B^T
  const int aRegs = words / 2, bRegs = words / 4;
  const int aTile = 16 * words, bTile = 8 * words;
  std::ostringstream o;
  const char *buffer = "memref<?x?xi32>";
  o << "module attributes {gpu.container_module} {\n"
    << "  func.func @kernel(%a: " << buffer << ", %b: " << buffer
    << ", %c: " << buffer << ", %d: " << buffer << ") {\n"
    << "    %c1 = arith.constant 1 : index\n"
    << "    %c32 = arith.constant 32 : index\n"
    << "    %c128 = arith.constant 128 : index\n"
    << "    %words = memref.dim %d, %c1 : " << buffer << "\n"
    << "    %tiles = arith.divui %words, %c128 : index\n"
    << "    gpu.launch_func @kernels::@mma blocks in (%tiles, %c1, %c1)\n"
    << "        threads in (%c32, %c1, %c1)\n"
    << "        args(%a : " << buffer << ", %b : " << buffer
    << ", %c : " << buffer << ", %d : " << buffer << ")\n"
    << "    return\n  }\n"
    << "  gpu.module @kernels {\n"
    << "    gpu.func @mma(%a: " << buffer << ", %b: " << buffer
    << ", %c: " << buffer << ", %d: " << buffer << ") kernel {\n"
    << "      %c0 = arith.constant 0 : index\n"
    << "      %c2 = arith.constant 2 : index\n"
    << "      %c3 = arith.constant 3 : index\n"
    << "      %tid = gpu.thread_id x\n"
    << "      %tile = gpu.block_id x\n"
    << "      %skip = arith.constant " << v.skipLane << " : index\n"
    << "      %runs = arith.cmpi ne, %tid, %skip : index\n"
    << "      scf.if %runs {\n"
    << "      %g = arith.shrui %tid, %c2 : index\n"
    << "      %t = arith.andi %tid, %c3 : index\n";
  // %name = base + tile * tileStride + g * gStride + t * tStride.
  auto index = [&](const std::string &name, int tileStride, int gStride,
                   int tStride, int offset) {
    o << "      %" << name << "_ts = arith.constant " << tileStride
      << " : index\n"
      << "      %" << name << "_gs = arith.constant " << gStride << " : index\n"
      << "      %" << name << "_tt = arith.constant " << tStride << " : index\n"
      << "      %" << name << "_o = arith.constant " << offset << " : index\n"
      << "      %" << name << "_1 = arith.muli %tile, %" << name
      << "_ts : index\n"
      << "      %" << name << "_2 = arith.muli %g, %" << name << "_gs : index\n"
      << "      %" << name << "_3 = arith.muli %t, %" << name << "_tt : index\n"
      << "      %" << name << "_4 = arith.addi %" << name << "_1, %" << name
      << "_2 : index\n"
      << "      %" << name << "_5 = arith.addi %" << name << "_4, %" << name
      << "_3 : index\n"
      << "      %" << name << " = arith.addi %" << name << "_5, %" << name
      << "_o : index\n";
  };
  const bool wordRegisters = v.bf16 || bytes;
  const char *pairType = wordRegisters ? "i32" : "vector<2xf16>";
  auto loadPair = [&](const std::string &name, const char *memref) {
    // bf16 and 8-bit registers are i32 in NVVM, f16 ones vector<2xf16>.
    std::string word = wordRegisters ? name : name + "_w";
    o << "      %" << word << " = memref.load %" << memref << "[%c0, %" << name
      << "_i] : " << buffer << "\n";
    if (!wordRegisters)
      o << "      %" << name << " = llvm.bitcast %" << word
        << " : i32 to vector<2xf16>\n";
  };
  // C, element i at (g + 8 (i >> 1)) * 8 + 2t + (i & 1).
  for (int i = 0; i < 4; ++i) {
    std::string name = "cw" + std::to_string(i);
    index(name, 128, 8, 2, 64 * (i >> 1) + (i & 1));
    o << "      %" << name << "_v = memref.load %c[%c0, %" << name
      << "] : " << buffer << "\n";
    if (!integer) // s32 accumulators are the words as loaded
      o << "      %acc0_" << i << " = arith.bitcast %" << name
        << "_v : i32 to f32\n";
  }
  for (int s = 0; s < v.steps; ++s) {
    std::string step = std::to_string(s);
    std::vector<std::string> a, b, c;
    for (int r = 0; r < aRegs; ++r) {
      std::string name = "a" + step + "_" + std::to_string(r);
      index(name + "_i", v.steps * aTile, words, 1,
            s * aTile + 8 * words * (r & 1) + 4 * (r >> 1));
      loadPair(name, "a");
      a.push_back("%" + name);
    }
    for (int r = 0; r < bRegs; ++r) {
      std::string name = "b" + step + "_" + std::to_string(r);
      index(name + "_i", v.steps * bTile, words, 1, s * bTile + 4 * r);
      loadPair(name, "b");
      b.push_back("%" + name);
    }
    for (int i = 0; i < 4; ++i)
      c.push_back(s == 0 && integer ? "%cw" + std::to_string(i) + "_v"
                                    : "%acc" + step + "_" + std::to_string(i));
    if (s == 0) {
      if (v.swap == MmaKernelVariant::Swap::A)
        std::swap(a[0], a[1]);
      if (v.swap == MmaKernelVariant::Swap::B && b.size() == 2)
        std::swap(b[0], b[1]);
      if (v.swap == MmaKernelVariant::Swap::C)
        std::swap(c[1], c[2]);
    }
    auto list = [&](const std::vector<std::string> &values) {
      std::string text;
      for (const std::string &value : values)
        text += (text.empty() ? "" : ", ") + value;
      return text;
    };
    const char *accumulator = integer ? "i32" : "f32";
    std::string result = std::string("!llvm.struct<(") + accumulator + ", " +
                         accumulator + ", " + accumulator + ", " + accumulator +
                         ")>";
    if (bytes && !integer) {
      o << "      %m" << step
        << " = llvm.call_intrinsic \"llvm.nvvm.mma.m16n8k32.row.col.f32."
        << typeName(v.bytes) << "." << typeName(v.typeB()) << ".f32\"("
        << list(a) << ", " << list(b) << ", " << list(c)
        << ") : (i32, i32, i32, i32, i32, i32, f32, f32, "
        << "f32, f32) -> " << result << "\n";
    } else {
      o << "      %m" << step << " = nvvm.mma.sync A[" << list(a) << "] B["
        << list(b) << "] C[" << list(c) << "]\n"
        << "          {layoutA = #nvvm.mma_layout<row>, "
           "layoutB = #nvvm.mma_layout<col>,\n";
      const char *typeA = integer ? typeName(v.bytes) : v.bf16 ? "bf16" : "";
      const char *typeB = integer ? typeName(v.typeB()) : typeA;
      if (*typeA)
        o << "           multiplicandAPtxType = #nvvm.mma_type<" << typeA
          << ">,\n"
          << "           multiplicandBPtxType = #nvvm.mma_type<" << typeB
          << ">,\n";
      if (integer)
        o << "           intOverflowBehavior = #nvvm.mma_int_overflow<"
          << (v.satfinite ? "satfinite" : "wrapped") << ">,\n";
      o << "           shape = #nvvm.shape<m = 16, n = 8, k = " << v.k << ">}\n"
        << "          : (" << pairType << ", " << pairType << ", "
        << accumulator << ") -> " << result << "\n";
    }
    for (int i = 0; i < 4; ++i)
      o << "      %acc" << s + 1 << "_" << i << " = llvm.extractvalue %m"
        << step << "[" << i << "] : " << result << "\n";
  }
  for (int i = 0; i < 4; ++i) {
    std::string name = "cw" + std::to_string(i);
    std::string value =
        "%acc" + std::to_string(v.steps) + "_" + std::to_string(i);
    if (!integer) {
      o << "      %" << name << "_out = arith.bitcast " << value
        << " : f32 to i32\n";
      value = "%" + name + "_out";
    }
    o << "      memref.store " << value << ", %d[%c0, %" << name
      << "] : " << buffer << "\n";
  }
  o << "      }\n      gpu.return\n    }\n  }\n}\n";
  return o.str();
}

std::string mmaWarpRuleKernel(int threads, MmaSites sites) {
  // `c`: the accumulator, so that two sites are two different ops.
  auto mma = [](int k, const std::string &c = "%f") {
    std::string a = k == 16 ? "%p, %p, %p, %p" : "%p, %p";
    std::string b = k == 16 ? "%p, %p" : "%p";
    return "      %m = nvvm.mma.sync A[" + a + "] B[" + b + "] C[" + c + ", " +
           c + ", " + c + ", " + c +
           "]\n"
           "          {layoutA = #nvvm.mma_layout<row>, "
           "layoutB = #nvvm.mma_layout<col>,\n"
           "           shape = #nvvm.shape<m = 16, n = 8, k = " +
           std::to_string(k) +
           ">}\n"
           "          : (vector<2xf16>, vector<2xf16>, f32)"
           " -> !llvm.struct<(f32, f32, f32, f32)>\n"
           "      %d = llvm.extractvalue %m[0] : "
           "!llvm.struct<(f32, f32, f32, f32)>\n";
  };
  std::ostringstream o;
  o << "module attributes {gpu.container_module} {\n"
    << "  func.func @kernel(%in: memref<?x?xi32>, %out: memref<?x?xi32>) {\n"
    << "    %c1 = arith.constant 1 : index\n"
    << "    %threads = arith.constant " << threads << " : index\n"
    << "    gpu.launch_func @kernels::@warp_rule blocks in (%c1, %c1, %c1)\n"
    << "        threads in (%threads, %c1, %c1)\n"
    << "        args(%in : memref<?x?xi32>, %out : memref<?x?xi32>)\n"
    << "    return\n  }\n"
    << "  gpu.module @kernels {\n"
    << "    gpu.func @warp_rule(%in: memref<?x?xi32>, %out: memref<?x?xi32>)"
    << " kernel {\n"
    << "      %c0 = arith.constant 0 : index\n"
    << "      %c16 = arith.constant 16 : index\n"
    << "      %tid = gpu.thread_id x\n"
    << "      %w = memref.load %in[%c0, %tid] : memref<?x?xi32>\n"
    << "      %p = llvm.bitcast %w : i32 to vector<2xf16>\n"
    << "      %f = arith.bitcast %w : i32 to f32\n";
  if (sites == MmaSites::One) {
    o << mma(16) << "      %r = arith.addf %d, %f : f32\n";
  } else {
    // The else branch has one op more: MLIR would merge identical blocks
    // into one mma.
    o << "      %low = arith.cmpi ult, %tid, %c16 : index\n"
      << "      %r = scf.if %low -> (f32) {\n"
      << mma(16) << "      scf.yield %d : f32\n      } else {\n"
      << "      %g = arith.negf %f : f32\n"
      << mma(sites == MmaSites::TwoShapes ? 8 : 16, "%g")
      << "      scf.yield %d : f32\n      }\n";
  }
  o << "      %bits = arith.bitcast %r : f32 to i32\n"
    << "      memref.store %bits, %out[%c0, %tid] : memref<?x?xi32>\n"
    << "      gpu.return\n    }\n  }\n}\n";
  return o.str();
}

} // namespace lowbit::testing
