//===- GpuMmaBuilderTest.cpp - buildMmaSyncF32 through the emulator -------===//
//
// The hand-written tensor-core kernels (MmaKernels.h) with every
// nvvm.mma.sync replaced by lowering/GpuMma.h's buildMmaSyncF32 (f16
// registers handed over as i32 bits, bf16 ones as vector<2xbf16>, so that
// the builder converts both ways) give the same D, bit for bit against the
// f64 matmul, and their PTX assembles; operands of the wrong count or type
// are an error and emit nothing.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"
#include "lowering/GpuMma.h"
#include "runtime/compiler/Compiler.h"
#include "tests/emulator/MmaCheck.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <iostream>

using namespace lowbit;
using namespace lowbit::testing;
using namespace mlir;

namespace {

/// `v`'s kernel with each nvvm.mma.sync rebuilt by buildMmaSyncF32, as
/// text; "" and a failed check when the builder refuses.
std::string rebuiltKernel(const MmaKernelVariant &v) {
  std::unique_ptr<MLIRContext> context = compiler::makeContext();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diagnostic) {
    diagnostics += diagnostic.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(mmaKernelText(v), context.get());
  INFO(diagnostics);
  REQUIRE(module);
  SmallVector<NVVM::MmaOp> ops;
  module->walk([&](NVVM::MmaOp op) { ops.push_back(op); });
  REQUIRE(int(ops.size()) == v.steps);
  for (NVVM::MmaOp op : ops) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Type element = v.bf16 ? Type(b.getBF16Type()) : Type(b.getF16Type());
    // f16 as i32 bits, bf16 as vector<2xbf16>: the other form than NVVM's.
    Type handed =
        v.bf16 ? Type(VectorType::get({2}, element)) : Type(b.getI32Type());
    auto registers = [&](ValueRange values) {
      SmallVector<Value> converted;
      for (Value value : values)
        converted.push_back(LLVM::BitcastOp::create(b, loc, handed, value));
      return converted;
    };
    SmallVector<Value> accumulators(op.getOperandC());
    FailureOr<SmallVector<Value, 4>> d =
        buildMmaSyncF32(b, loc, registers(op.getOperandA()),
                        registers(op.getOperandB()), accumulators, element);
    REQUIRE(succeeded(d));
    for (Operation *user : llvm::make_early_inc_range(op->getUsers())) {
      auto extract = cast<LLVM::ExtractValueOp>(user);
      extract.replaceAllUsesWith((*d)[size_t(extract.getPosition()[0])]);
      extract.erase();
    }
    op.erase();
  }
  REQUIRE(succeeded(verify(*module)));
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream);
  return text;
}

} // namespace

TEST_CASE("emulator: kernels built by buildMmaSyncF32 compute the matmul",
          "[emulator][mma]") {
  size_t elements = 0;
  int assembled = 0;
  bool haveAssembler = !test::ptxasPath().empty();
  for (const MmaKernelVariant &v : everyVariant()) {
    INFO(describe(v));
    std::string text = rebuiltKernel(v);
    CHECK(text.find("nvvm.mma.sync") != std::string::npos);
    std::vector<MmaTile> tiles = makeTiles(v, 11);
    std::vector<int32_t> d;
    std::string error = runMmaTiles(text, v, tiles, d);
    INFO(error);
    REQUIRE(error == "");
    CHECK(mismatches(v, tiles, d) == 0);
    elements += d.size();
    if (v.steps != 2 || !haveAssembler)
      continue;
    std::string ptx;
    REQUIRE(test::compileToPtx(text, "sm_90a", ptx));
    assembled += test::checkAssembles(ptx, "sm_90a");
  }
  if (haveAssembler)
    CHECK(assembled == 4);
  std::cout << "emulator: buildMmaSyncF32's kernels (8 variants): " << elements
            << " elements of D bit-exact; " << assembled
            << " assembled for sm_90a\n";
}

TEST_CASE("emulator: buildMmaSyncF32 refuses wrong operands",
          "[emulator][mma]") {
  std::unique_ptr<MLIRContext> context = compiler::makeContext();
  context->loadDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diagnostic) {
    diagnostics += diagnostic.str() + "\n";
    return success();
  });
  OpBuilder b(context.get());
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  Type pair = VectorType::get({2}, f16);
  auto function = LLVM::LLVMFuncOp::create(
      b, loc, "f",
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context.get()),
                                  {pair, f32, b.getI16Type()}));
  b.setInsertionPointToStart(function.addEntryBlock(b));
  Value p = function.getArgument(0), c = function.getArgument(1),
        narrow = function.getArgument(2);
  struct Case {
    const char *name;
    SmallVector<Value> a, b, c;
    Type element;
    const char *expected;
  } cases[] = {
      {"3 A registers", {p, p, p}, {p}, {c, c, c, c}, f16, "m16n8k16 takes"},
      {"1 B register with 4 A",
       {p, p, p, p},
       {p},
       {c, c, c, c},
       f16,
       "m16n8k16 takes"},
      {"f32 multiplicands",
       {p, p, p, p},
       {p, p},
       {c, c, c, c},
       f32,
       "must be f16 or bf16"},
      {"an i16 register",
       {p, p, p, narrow},
       {p, p},
       {c, c, c, c},
       f16,
       "must be 'vector<2xf16>' or 'i32'"},
      {"f16 accumulators",
       {p, p, p, p},
       {p, p},
       {p, p, p, p},
       f16,
       "accumulators must be f32"},
  };
  for (Case &test : cases) {
    diagnostics.clear();
    size_t before = function.getBody().front().getOperations().size();
    FailureOr<SmallVector<Value, 4>> d =
        buildMmaSyncF32(b, loc, test.a, test.b, test.c, test.element);
    INFO(test.name << ": " << diagnostics);
    CHECK(failed(d));
    CHECK_THAT(diagnostics, Catch::Contains(test.expected));
    CHECK(function.getBody().front().getOperations().size() == before);
  }
}
