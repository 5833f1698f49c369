//===- KiviAttentionCompiler.cpp - KIVI decode attention -> CPU | PTX -----===//

#include "runtime/compiler/KiviAttentionCompiler.h"

#include "dialect/LowbitKiviOps.h"
#include "kv/KvPageTable.h"
#include "runtime/compiler/KernelCompileSupport.h"
#include "runtime/compiler/KiviCompiler.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <string>

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::compiler {

namespace {

enum Param : size_t {
  Query,
  KeyCodes,
  KeyScales,
  KeyZeros,
  KeyResidual,
  ValueCodes,
  ValueScales,
  ValueZeros,
  ValueResidual,
  Lengths,
  Output,
  Partials,
  BlockTable,
};

/// A parameter's name as the messages write it ("key codes").
std::string displayName(const KvKernelParam &param) {
  std::string name = param.name;
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>>
buildKiviAttentionModule(MLIRContext &context,
                         const kv::KiviAttentionSpec &spec) {
  std::string error;
  if (!kv::validateKiviAttentionSpec(spec, &error))
    return compileError(error);
  auto body = [&](OpBuilder &b, Location loc, ValueRange args) {
    ld::KiviDecodeAttentionOp::create(
        b, loc, args[Query], args[KeyCodes], args[KeyScales], args[KeyZeros],
        args[KeyResidual], args[ValueCodes], args[ValueScales],
        args[ValueZeros], args[ValueResidual], args[Lengths], args[Output],
        args[Partials], spec.paged() ? args[BlockTable] : Value(),
        b.getStringAttr(kv::kiviSchemeName(spec.keys.bits)),
        b.getI64IntegerAttr(spec.keys.groupSize),
        b.getI64IntegerAttr(spec.keys.residual),
        spec.keys.perChannel ? b.getUnitAttr() : UnitAttr(),
        spec.keys.zero == kv::KiviZero::Integer ? b.getUnitAttr() : UnitAttr(),
        b.getF32FloatAttr(spec.softmaxScale),
        b.getI64IntegerAttr(spec.splitTokens));
  };
  return buildSignatureModule(context, kiviAttentionParams(spec), body,
                              "KIVI decode-attention");
}

llvm::Expected<OwningOpRef<ModuleOp>>
buildKiviAttentionLoops(MLIRContext &context,
                        const kv::KiviAttentionSpec &spec) {
  return lowerModule(buildKiviAttentionModule(context, spec), lowerKiviToLoops);
}

llvm::Error checkKiviAttentionBuffers(const kv::KiviAttentionSpec &spec,
                                      const std::vector<KvBuffer> &buffers) {
  std::vector<KvKernelParam> params = kiviAttentionParams(spec);
  if (buffers.size() != params.size())
    return compileError("the kernel takes " + std::to_string(params.size()) +
                        " buffers, got " + std::to_string(buffers.size()));
  for (size_t index = 0; index < params.size(); ++index)
    if (buffers[index].shape.size() != params[index].shape.size())
      return compileError(displayName(params[index]) + " has rank " +
                          std::to_string(buffers[index].shape.size()) +
                          "; the kernel takes " +
                          std::to_string(params[index].shape.size()));
  auto size = [&](size_t param, size_t axis) {
    return buffers[param].shape[axis];
  };
  // Expects dimension `axis` of `param` to be `value`.
  auto expect = [&](size_t param, size_t axis, int64_t value,
                    const std::string &why) -> llvm::Error {
    if (size(param, axis) == value)
      return llvm::Error::success();
    return compileError(displayName(params[param]) + " dimension " +
                        std::to_string(axis) + " is " +
                        std::to_string(size(param, axis)) + "; " + why +
                        " needs " + std::to_string(value));
  };
  const int64_t batch = size(Query, 0);
  const std::string batchWhy = "the batch (query dimension 0)";
  std::vector<size_t> batched = {Lengths, Output, Partials, KeyResidual,
                                 ValueResidual};
  batched.push_back(spec.paged() ? size_t(BlockTable) : size_t(KeyCodes));
  for (size_t param : batched)
    if (llvm::Error error = expect(param, 0, batch, batchWhy))
      return error;
  for (size_t axis = 0; axis < 4; ++axis)
    if (llvm::Error error = expect(ValueCodes, axis, size(KeyCodes, axis),
                                   "the key codes' shape"))
      return error;
  const int64_t maxTokens =
      spec.paged() ? kv::kPageTokens * size(BlockTable, 1) : size(KeyCodes, 2);
  // Scales and zeros: per token the codes' rows; per channel (keys) the
  // codes' pages, or a row per group of the contiguous capacity.
  for (auto [scales, zeros, perChannel] :
       {std::tuple{size_t(KeyScales), size_t(KeyZeros), spec.keys.perChannel},
        std::tuple{size_t(ValueScales), size_t(ValueZeros), false}}) {
    for (size_t axis = 0; axis < 4; ++axis)
      if (llvm::Error error = expect(zeros, axis, size(scales, axis),
                                     displayName(params[scales]) + "' shape"))
        return error;
    int64_t groups =
        (maxTokens + spec.keys.groupSize - 1) / spec.keys.groupSize;
    llvm::Error error =
        !perChannel ? expect(scales, 2, size(KeyCodes, 2), "the codes' rows")
        : spec.paged()
            ? expect(scales, 0, size(KeyCodes, 0), "the codes' pages")
            : expect(scales, 2, groups, "a row per group of the capacity");
    if (error)
      return error;
    if (llvm::Error error =
            expect(scales, 0, size(KeyCodes, 0), "the codes' dimension 0"))
      return error;
  }
  int64_t splits = (maxTokens + spec.splitTokens - 1) / spec.splitTokens;
  if (llvm::Error error =
          expect(Partials, 2, splits,
                 "ceil(" + std::to_string(maxTokens) + " max tokens / split " +
                     std::to_string(spec.splitTokens) + ")"))
    return error;
  const auto *lengths = static_cast<const int32_t *>(buffers[Lengths].data);
  const auto *table =
      spec.paged() ? static_cast<const int32_t *>(buffers[BlockTable].data)
                   : nullptr;
  std::string shared;
  if (table &&
      !kv::checkPagesUnshared({table, size_t(batch * size(BlockTable, 1))},
                              size(BlockTable, 1), size(KeyCodes, 0), &shared))
    return compileError(shared);
  for (int64_t b = 0; b < batch; ++b) {
    if (lengths[b] < 0 || lengths[b] > maxTokens)
      return compileError("sequence " + std::to_string(b) + " holds " +
                          std::to_string(lengths[b]) +
                          " tokens; the cache holds [0, " +
                          std::to_string(maxTokens) + "]");
    if (!spec.paged())
      continue;
    // The quantized prefix is read from pages; the ring needs none.
    int64_t prefix = spec.keys.quantizedPrefix(lengths[b]);
    for (int64_t block = 0; block * kv::kPageTokens < prefix; ++block) {
      int32_t page = table[b * size(BlockTable, 1) + block];
      if (page < 0 || page >= size(KeyCodes, 0))
        return compileError("block table entry [" + std::to_string(b) + ", " +
                            std::to_string(block) + "] is " +
                            std::to_string(page) + "; sequence " +
                            std::to_string(b) +
                            "'s quantized tokens need a "
                            "page in [0, " +
                            std::to_string(size(KeyCodes, 0)) + ")");
    }
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<KiviAttentionCpuKernel>>
compileKiviAttentionForCpu(const kv::KiviAttentionSpec &spec) {
  auto executable = loopsToHost([&](MLIRContext &context) {
    return buildKiviAttentionLoops(context, spec);
  });
  if (!executable)
    return executable.takeError();
  return std::make_unique<KiviAttentionCpuKernel>(
      spec, std::move(*executable),
      [](const kv::KiviAttentionSpec &spec,
         const std::vector<KvBuffer> &buffers) -> llvm::Error {
        if (llvm::Error error = checkKiviAttentionBuffers(spec, buffers))
          return error;
        return checkBufferShapes(kiviAttentionParams(spec), buffers);
      });
}

} // namespace lowbit::compiler
