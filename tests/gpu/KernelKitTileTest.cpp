//===- KernelKitTileTest.cpp - The kit's ldmatrix and cp.async helpers ----===//
//
// A one-warp kernel built with lowering/kit/KernelEmitter.h's tile moves:
// cp.async of 16 (zero-fill form), 8 and 4 bytes into a shared tile, a
// commit and a wait, then ldmatrix x1, x2 .trans and x4 from it. Each
// helper must give the instruction it names in the PTX of every chip with
// cp.async and ldmatrix (sm_80 on), and ptxas must accept it.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"

#include "lowering/GpuTail.h"
#include "lowering/kit/KernelEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <catch2/catch.hpp>

#include <array>
#include <cctype>

using namespace mlir;
using namespace lowbit;

namespace {

/// func @tiles(%in: memref<?x?xf16>, %out: memref<32x7xi32>): one warp
/// copies a 16 x 16 f16 tile of %in to shared memory with cp.async and
/// stores what each ldmatrix gives lane l in row l of %out.
OwningOpRef<ModuleOp> tileKernel(MLIRContext &context) {
  ImplicitLocOpBuilder b(UnknownLoc::get(&context), &context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b);
  b.setInsertionPointToEnd(module->getBody());
  Type f16 = b.getF16Type(), i32 = b.getI32Type();
  auto input =
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, f16);
  auto output = MemRefType::get({32, 7}, i32);
  auto function =
      func::FuncOp::create(b, "tiles", b.getFunctionType({input, output}, {}));
  b.setInsertionPointToStart(function.addEntryBlock());
  kit::KernelEmitter kit(b);
  gpu::LaunchOp launch =
      kit.launchBlocks(kit.idx(1), kit::kWarpSize,
                       {kit::workgroupMemRefType(&context, {16, 16}, f16)});
  func::ReturnOp::create(b);
  b.setInsertionPoint(launch.getBody().front().getTerminator());
  Value in = function.getArgument(0), out = function.getArgument(1);
  Value tile = launch.getWorkgroupAttributions().front();
  Value lane = launch.getThreadIds().x;
  // Lane l copies half a row of the tile: row l / 2, columns 8 (l % 2) ..
  // + 7 as 16 bytes (all of them read), then 8 and 4 of the same again.
  Value row = arith::DivUIOp::create(b, lane, kit.idx(2));
  Value col = kit.mul(arith::RemUIOp::create(b, lane, kit.idx(2)), kit.idx(8));
  Value source = kit.elementPointer(in, {row, col},
                                    kit::KernelEmitter::kGlobalAddressSpace);
  Value destination = kit.elementPointer(
      tile, {row, col}, kit::KernelEmitter::kSharedAddressSpace);
  // The zero-fill form reads the bytes left in the row (at most 16).
  Value left =
      kit.mul(arith::SubIOp::create(b, kit::dimOf(b, in, 1), col), kit.idx(2));
  Value sourceBytes = arith::IndexCastOp::create(
      b, i32, arith::MinUIOp::create(b, left, kit.idx(16)));
  kit.copyAsync(destination, source, 16, sourceBytes);
  kit.commitCopies();
  kit.copyAsync(destination, source, 8);
  kit.copyAsync(destination, source, 4);
  kit.commitCopies();
  kit.waitCopies(1);
  kit.waitCopies(0);
  kit.barrier();
  // ldmatrix row addresses: lanes 8 j .. 8 j + 7 give rows 0..7 of matrix
  // j, the four 8 x 8 quarters of the tile.
  Value matrixRow = arith::RemUIOp::create(b, lane, kit.idx(16));
  Value matrixCol =
      kit.mul(arith::DivUIOp::create(b, lane, kit.idx(16)), kit.idx(8));
  Value rowPointer = kit.elementPointer(
      tile, {matrixRow, matrixCol}, kit::KernelEmitter::kSharedAddressSpace);
  SmallVector<Value> registers;
  for (auto [count, transpose] :
       std::array<std::pair<int, bool>, 3>{{{1, false}, {2, true}, {4, false}}})
    llvm::append_range(registers,
                       kit.loadMatrices(rowPointer, count, transpose));
  for (auto [column, value] : llvm::enumerate(registers))
    memref::StoreOp::create(b, value, out, ValueRange{lane, kit.idx(column)});
  return module;
}

} // namespace

TEST_CASE("kit: ldmatrix and cp.async emit what they name and assemble",
          "[ptx][kit]") {
  DialectRegistry registry;
  registerGpuTailDependencies(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = tileKernel(context);
  REQUIRE(succeeded(verify(*module)));
  static constexpr std::array<const char *, 5> kArchs = {
      "sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"};
  for (const test::ArchPtx &result : test::ptxForArchs(*module, kArchs)) {
    INFO(result.arch << ": " << result.error);
    REQUIRE(result.ptx);
    // LLVM separates some operands with a tab: compare with single spaces.
    std::string ptx;
    for (char c : result.ptx->ptx)
      if (!(std::isspace(static_cast<unsigned char>(c)) && !ptx.empty() &&
            ptx.back() == ' ' && c != '\n'))
        ptx += c == '\t' ? ' ' : c;
    for (const char *instruction :
         {"cp.async.cg.shared.global [", "cp.async.ca.shared.global [",
          "cp.async.commit_group;", "cp.async.wait_group 1;",
          "cp.async.wait_group 0;", "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
          "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
          "ldmatrix.sync.aligned.m8n8.x4.shared.b16"}) {
      INFO(instruction);
      CHECK(ptx.find(instruction) != std::string::npos);
    }
    // The sizes: 16 with the source-size operand, then 8 and 4.
    CHECK(ptx.find("], 16, %r") != std::string::npos);
    CHECK(ptx.find("], 8;") != std::string::npos);
    CHECK(ptx.find("], 4;") != std::string::npos);
    test::checkAssembles(result.ptx->ptx, result.arch);
  }
}
