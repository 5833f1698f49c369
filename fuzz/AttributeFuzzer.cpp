//===- AttributeFuzzer.cpp - Fuzz the lowbit dialect's attribute parsers
//---===//
//
// Input: attribute text (`#lowbit.scheme<"mxfp4">`, `#lowbit.scale<...>`,
// `#lowbit.float<"e4m3">`, ...), parsed through an MLIRContext with the
// lowbit dialect loaded. A refusal is a diagnostic, never an abort; an
// accepted attribute prints and parses back to the same (uniqued) value.
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitDialect.h"
#include "fuzz/FuzzCheck.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

mlir::MLIRContext &context() {
  // One context for the whole run: attributes are uniqued in it, which is
  // what the reparse check compares. Diagnostics are swallowed (refusals
  // are the expected answer to most inputs).
  static mlir::MLIRContext *instance = [] {
    auto *created =
        new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    created->loadDialect<lowbit::dialect::LowbitDialect>();
    created->getDiagEngine().registerHandler(
        [](mlir::Diagnostic &) { return mlir::success(); });
    return created;
  }();
  return *instance;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  // Only lowbit's attributes: the builtin ones are MLIR's to fuzz (they
  // are still reached where a lowbit attribute nests one).
  if (!text.starts_with("#lowbit."))
    return 0;
  mlir::MLIRContext &ctx = context();
  mlir::Attribute attribute = mlir::parseAttribute(text, &ctx);
  if (!attribute)
    return 0;
  std::string printed;
  llvm::raw_string_ostream stream(printed);
  attribute.print(stream);
  stream.flush();
  mlir::Attribute reread = mlir::parseAttribute(printed, &ctx);
  LOWBIT_FUZZ_CHECK(reread, "the printed attribute parses");
  LOWBIT_FUZZ_CHECK(reread == attribute,
                    "the printed attribute reads back equal");
  return 0;
}
