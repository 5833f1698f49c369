//===- MatrixMemoryKernels.cpp - Hand-written cp.async + ldmatrix kernels -===//

#include "tests/emulator/MatrixMemoryKernels.h"

#include <sstream>

namespace lowbit::testing {

std::string matrixMemoryKernelText(const MatrixMemoryKernel &kernel) {
  using Rule = MatrixMemoryKernel::Rule;
  const char *tile = "memref<128xi32, #gpu.address_space<workgroup>>";
  std::ostringstream o;
  o << "module attributes {gpu.container_module} {\n"
    << "  func.func @kernel(%in: memref<?x?xi32>, %out: memref<?x?xi32>) {\n"
    << "    %c1 = arith.constant 1 : index\n"
    << "    %c32 = arith.constant 32 : index\n"
    << "    gpu.launch_func @kernels::@matrix_memory blocks in (%c1, %c1, "
       "%c1)\n"
    << "        threads in (%c32, %c1, %c1)\n"
    << "        args(%in : memref<?x?xi32>, %out : memref<?x?xi32>)\n"
    << "    return\n  }\n"
    << "  gpu.module @kernels {\n"
    << "    gpu.func @matrix_memory(%in: memref<?x?xi32>, %out: "
       "memref<?x?xi32>)\n"
    << "        workgroup(%tile : " << tile << ") kernel {\n"
    << "      %c0 = arith.constant 0 : index\n"
    << "      %c3 = arith.constant 3 : index\n"
    << "      %c7 = arith.constant 7 : index\n"
    << "      %c16 = arith.constant 16 : index\n"
    << "      %c31 = arith.constant 31 : index\n"
    << "      %tid = gpu.thread_id x\n"
    << "      %sbase = memref.extract_aligned_pointer_as_index %tile : " << tile
    << " -> index\n"
    << "      %gbase = memref.extract_aligned_pointer_as_index %in : "
       "memref<?x?xi32> -> index\n"
    << "      %mine = arith.muli %tid, %c16 : index\n";
  if (kernel.rule == Rule::SourcePastEnd)
    o << "      %last = arith.cmpi eq, %tid, %c31 : index\n"
      << "      %c512 = arith.constant 512 : index\n"
      << "      %gmine = arith.select %last, %c512, %mine : index\n";
  else
    o << "      %gmine = arith.addi %mine, %c0 : index\n";
  o << "      %lane3 = arith.cmpi eq, %tid, %c3 : index\n";
  const int copies = 16 / kernel.copyBytes;
  const bool twoGroups =
      kernel.rule == Rule::WaitOneOfTwo || kernel.rule == Rule::WaitOneThenZero;
  const char *cache = kernel.copyBytes == 16 ? "cg" : "ca";
  for (int c = 0; c < copies; ++c) {
    std::string n = std::to_string(c);
    o << "      %off" << n << " = arith.constant " << c * kernel.copyBytes
      << " : index\n"
      << "      %so" << n << " = arith.addi %mine, %off" << n << " : index\n"
      << "      %go" << n << " = arith.addi %gmine, %off" << n << " : index\n"
      << "      %sa" << n << " = arith.addi %sbase, %so" << n << " : index\n"
      << "      %ga" << n << " = arith.addi %gbase, %go" << n << " : index\n"
      << "      %si" << n << " = arith.index_cast %sa" << n
      << " : index to i64\n"
      << "      %gi" << n << " = arith.index_cast %ga" << n
      << " : index to i64\n"
      << "      %sp" << n << " = llvm.inttoptr %si" << n
      << " : i64 to !llvm.ptr<3>\n"
      << "      %gp" << n << " = llvm.inttoptr %gi" << n
      << " : i64 to !llvm.ptr<1>\n";
    if (c == copies - 1) {
      // Lane 3 zero-fills the end of its last copy.
      o << "      %full = arith.constant " << kernel.copyBytes << " : i32\n"
        << "      %part = arith.constant "
        << zeroFilledSourceBytes(kernel.copyBytes) << " : i32\n"
        << "      %src" << n << " = arith.select %lane3, %part, %full : i32\n"
        << "      nvvm.cp.async.shared.global %sp" << n << ", %gp" << n << ", "
        << kernel.copyBytes << ", cache = " << cache << ", %src" << n
        << " : !llvm.ptr<3>, !llvm.ptr<1>, i32\n";
    } else {
      o << "      nvvm.cp.async.shared.global %sp" << n << ", %gp" << n << ", "
        << kernel.copyBytes << ", cache = " << cache
        << " : !llvm.ptr<3>, !llvm.ptr<1>\n";
    }
    if (twoGroups && c == copies / 2 - 1)
      o << "      nvvm.cp.async.commit.group\n";
  }
  if (kernel.rule == Rule::CopiedTwice)
    o << "      nvvm.cp.async.shared.global %sp0, %gp0, " << kernel.copyBytes
      << ", cache = " << cache << " : !llvm.ptr<3>, !llvm.ptr<1>\n";
  if (kernel.rule != Rule::NotCommitted)
    o << "      nvvm.cp.async.commit.group\n";
  if (twoGroups)
    o << "      nvvm.cp.async.wait.group 1\n";
  if (kernel.rule == Rule::WaitOneThenZero ||
      (!twoGroups && kernel.rule != Rule::NoWait))
    o << "      nvvm.cp.async.wait.group 0\n";
  if (kernel.rule != Rule::NoBarrier)
    o << "      gpu.barrier\n";
  // Lane l supplies the address of shared row (7 l) % 32.
  o << "      %r7 = arith.muli %tid, %c7 : index\n"
    << "      %row = arith.andi %r7, %c31 : index\n"
    << "      %rowoff = arith.muli %row, %c16 : index\n";
  o << "      %lane0 = arith.cmpi eq, %tid, %c0 : index\n";
  if (kernel.rule == Rule::MisalignedRow)
    o << "      %c8 = arith.constant 8 : index\n"
      << "      %skew = arith.select %lane0, %c8, %c0 : index\n"
      << "      %rowoff2 = arith.addi %rowoff, %skew : index\n";
  else
    o << "      %rowoff2 = arith.addi %rowoff, %c0 : index\n";
  // GlobalRow: lane 0's row in `in` instead of the tile.
  o << "      %rbase = arith.select %lane0, "
    << (kernel.rule == Rule::GlobalRow ? "%gbase" : "%sbase")
    << ", %sbase : index\n"
    << "      %ra = arith.addi %rbase, %rowoff2 : index\n"
    << "      %ri = arith.index_cast %ra : index to i64\n"
    << "      %rp = llvm.inttoptr %ri : i64 to !llvm.ptr<3>\n";
  std::string resultType = kernel.matrices == 1 ? "i32"
                           : kernel.matrices == 2
                               ? "!llvm.struct<(i32, i32)>"
                               : "!llvm.struct<(i32, i32, i32, i32)>";
  o << "      %m = nvvm.ldmatrix %rp {num = " << kernel.matrices
    << " : i32, layout = #nvvm.mma_layout<"
    << (kernel.transpose ? "col" : "row")
    << ">, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, "
       "eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> "
    << resultType << "\n"
    << "      %c4 = arith.constant 4 : index\n"
    << "      %obase = arith.muli %tid, %c4 : index\n";
  for (int j = 0; j < kernel.matrices; ++j) {
    std::string n = std::to_string(j);
    if (kernel.matrices == 1)
      o << "      %v0 = arith.addi %m, %m : i32\n"
        << "      %w0 = arith.subi %v0, %m : i32\n";
    else
      o << "      %w" << n << " = llvm.extractvalue %m[" << j
        << "] : " << resultType << "\n";
    o << "      %j" << n << " = arith.constant " << j << " : index\n"
      << "      %o" << n << " = arith.addi %obase, %j" << n << " : index\n"
      << "      memref.store %w" << n << ", %out[%c0, %o" << n
      << "] : memref<?x?xi32>\n";
  }
  o << "      gpu.return\n    }\n  }\n}\n";
  return o.str();
}

} // namespace lowbit::testing
