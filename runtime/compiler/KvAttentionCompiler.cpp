//===- KvAttentionCompiler.cpp - Decode attention: spec -> kernels --------===//

#include "runtime/compiler/KvAttentionCompiler.h"

#include "dialect/LowbitAttentionOps.h"
#include "kv/KvPaged.h"
#include "lowering/CpuTail.h"
#include "lowering/GpuDecodeAttention.h"
#include "lowering/PassVerification.h"
#include "lowering/Passes.h"
#include "runtime/compiler/KernelCompileSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::compiler {

namespace {

constexpr int64_t kPageTokens = 16;

Attribute formatAttr(MLIRContext *context, const kv::KvAttentionSpec &spec) {
  switch (spec.scheme) {
  case kv::KvScheme::Fp8E4M3:
    return ld::FloatFormatAttr::get(context,
                                    lookupFormat("e4m3")->floatParams());
  case kv::KvScheme::Fp8E5M2:
    return ld::FloatFormatAttr::get(context,
                                    lookupFormat("e5m2")->floatParams());
  case kv::KvScheme::Int8Groups:
    return ld::IntFormatAttr::get(context, 8, /*isSigned=*/true);
  case kv::KvScheme::Kivi4:
  case kv::KvScheme::Kivi2:
    // kivi_attend's (KiviAttentionCompiler); buildKvAttentionModule refuses
    // them before asking.
    break;
  }
  return {};
}

} // namespace

std::vector<std::array<int64_t, 2>>
kvAttentionShapes(const kv::KvAttentionSpec &spec,
                  const KvAttentionSizes &sizes) {
  int64_t rows = spec.paged ? sizes.pages * spec.kvHeads * kPageTokens
                            : sizes.batch * spec.kvHeads * sizes.maxTokens;
  int64_t maxTokens =
      spec.paged ? sizes.maxBlocks * kPageTokens : sizes.maxTokens;
  int64_t splits = (maxTokens + spec.splitTokens - 1) / spec.splitTokens;
  CallSizes callSizes = {
      {kQueryRows, sizes.batch * spec.qHeads},
      {kCacheRows, rows},
      {kBatch, sizes.batch},
      {kMaxBlocks, sizes.maxBlocks},
      {kPartialRows, sizes.batch * spec.kvHeads * splits * spec.groupHeads()}};
  std::vector<std::array<int64_t, 2>> shapes;
  for (const KvKernelParam &param : kvAttentionParams(spec)) {
    std::vector<int64_t> shape = bindShape(param, callSizes);
    shapes.push_back({shape[0], shape[1]});
  }
  return shapes;
}

llvm::Expected<KvAttentionSizes>
kvAttentionSizesOf(const kv::KvAttentionSpec &spec,
                   const std::vector<HostBuffer> &buffers) {
  std::vector<KvKernelParam> params = kvAttentionParams(spec);
  if (buffers.size() != params.size())
    return compileError("the kernel takes " + std::to_string(params.size()) +
                        " buffers, got " + std::to_string(buffers.size()));
  KvAttentionSizes sizes;
  sizes.batch = buffers[5].cols;
  int64_t rows = buffers[1].rows;
  if (spec.paged) {
    sizes.maxBlocks = buffers[6].cols;
    sizes.pages = rows / (spec.kvHeads * kPageTokens);
  } else {
    sizes.maxTokens = sizes.batch > 0 ? rows / (sizes.batch * spec.kvHeads) : 0;
  }
  if (sizes.batch < 1 || (spec.paged ? sizes.pages < 1 || sizes.maxBlocks < 1
                                     : sizes.maxTokens < 1))
    return compileError("seq_lens [1, batch] and the caches must be non-empty");
  std::vector<std::array<int64_t, 2>> expected = kvAttentionShapes(spec, sizes);
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].rows != expected[i][0] || buffers[i].cols != expected[i][1])
      return compileError(params[i].name + " is [" +
                          std::to_string(buffers[i].rows) + ", " +
                          std::to_string(buffers[i].cols) +
                          "]; the spec and the "
                          "other buffers make it [" +
                          std::to_string(expected[i][0]) + ", " +
                          std::to_string(expected[i][1]) + "]");
  // The kernels read what the lengths and the block table say: refuse a
  // length past the cache or a page index out of range before they run.
  auto *lengths = static_cast<const int32_t *>(buffers[5].data);
  std::vector<int64_t> tokens(lengths, lengths + sizes.batch);
  std::string error;
  if (spec.paged) {
    kv::PagedLayout layout;
    layout.pages = sizes.pages;
    layout.kvHeads = spec.kvHeads;
    layout.batch = sizes.batch;
    layout.maxBlocks = sizes.maxBlocks;
    auto *table = static_cast<const int32_t *>(buffers[6].data);
    layout.blockTable.assign(table, table + sizes.batch * sizes.maxBlocks);
    if (!kv::validatePagedLayout(layout, tokens, &error))
      return compileError(error);
  } else {
    for (int64_t b = 0; b < sizes.batch; ++b)
      if (tokens[b] < 0 || tokens[b] > sizes.maxTokens)
        return compileError("seq_lens[" + std::to_string(b) + "] is " +
                            std::to_string(tokens[b]) + "; the cache holds " +
                            std::to_string(sizes.maxTokens) + " tokens");
  }
  return sizes;
}

llvm::Expected<OwningOpRef<ModuleOp>>
buildKvAttentionModule(MLIRContext &context, const kv::KvAttentionSpec &spec) {
  // A KIVI cache has its own layout and op (kivi_attend); read as kv_attend
  // it would be taken for int8 codes.
  if (kv::isKivi(spec.scheme))
    return compileError("kv_attend does not take the KIVI scheme " +
                        std::string(kv::kvSchemeName(spec.scheme)) +
                        "; kivi_attend does");
  context.loadDialect<ld::LowbitDialect, func::FuncDialect,
                      bufferization::BufferizationDialect,
                      memref::MemRefDialect, arith::ArithDialect>();
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  ImplicitLocOpBuilder b(loc, builder);
  b.setInsertionPointToEnd(module->getBody());

  const int64_t dynamic = ShapedType::kDynamic;
  const int64_t dim = spec.headDim, group = spec.groupHeads();
  std::vector<KvKernelParam> params = kvAttentionParams(spec);
  SmallVector<Type> argTypes;
  for (const KvKernelParam &param : params)
    argTypes.push_back(memrefTypeOf(b, param));
  auto func =
      func::FuncOp::create(b, kKernelName, b.getFunctionType(argTypes, {}));
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  b.setInsertionPointToStart(func.addEntryBlock());
  auto arg = [&](StringRef name) -> Value {
    for (auto [index, param] : llvm::enumerate(params))
      if (param.name == name)
        return func.getArgument(index);
    return {};
  };
  auto idx = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, value);
  };
  auto rows = [&](Value buffer) -> Value {
    return memref::DimOp::create(b, buffer, 0);
  };

  // The logical views of the 2-D parameters.
  Value batch = memref::DimOp::create(b, arg("seq_lens"), 1);
  Value cacheRows = rows(arg("key_codes"));
  Value tokens, maxTokens, firstDim;
  if (spec.paged) {
    firstDim =
        arith::DivUIOp::create(b, cacheRows, idx(spec.kvHeads * kPageTokens));
    tokens = idx(kPageTokens);
    maxTokens = arith::MulIOp::create(
        b, memref::DimOp::create(b, arg("block_table"), 1), idx(kPageTokens));
  } else {
    firstDim = batch;
    tokens = arith::DivUIOp::create(
        b, cacheRows, arith::MulIOp::create(b, batch, idx(spec.kvHeads)));
    maxTokens = tokens;
  }
  Value splits =
      arith::CeilDivUIOp::create(b, maxTokens, idx(spec.splitTokens));
  auto expand = [&](Value buffer, ArrayRef<OpFoldResult> shape,
                    ArrayRef<ReassociationIndices> groups) -> Value {
    SmallVector<int64_t> staticShape;
    for (OpFoldResult size : shape)
      staticShape.push_back(getConstantIntValue(size).value_or(dynamic));
    auto type = MemRefType::get(
        staticShape, cast<MemRefType>(buffer.getType()).getElementType());
    return memref::ExpandShapeOp::create(b, type, buffer, groups, shape);
  };
  auto flatten = [&](Value buffer) -> Value {
    return memref::CollapseShapeOp::create(
        b, buffer, ArrayRef<ReassociationIndices>{{0, 1}});
  };
  OpFoldResult batchSize = batch;
  Value query =
      expand(arg("query"),
             {batchSize, b.getIndexAttr(spec.qHeads), b.getIndexAttr(dim)},
             {{0, 1}, {2}});
  SmallVector<OpFoldResult> cacheShape = {
      firstDim, b.getIndexAttr(spec.kvHeads),
      spec.paged ? OpFoldResult(b.getIndexAttr(kPageTokens))
                 : OpFoldResult(tokens),
      b.getIndexAttr(dim)};
  auto cacheView = [&](Value buffer, int64_t cols) {
    SmallVector<OpFoldResult> shape = cacheShape;
    shape.back() = b.getIndexAttr(cols);
    return expand(buffer, shape, {{0, 1, 2}, {3}});
  };
  auto scalesView = [&](Value buffer) {
    return spec.isFp8() ? flatten(buffer)
                        : cacheView(buffer, spec.scaleWidth());
  };
  Value keyCodes = cacheView(arg("key_codes"), dim);
  Value valueCodes = cacheView(arg("value_codes"), dim);
  Value keyScales = scalesView(arg("key_scales"));
  Value valueScales = scalesView(arg("value_scales"));
  Value seqLens = flatten(arg("seq_lens"));
  Value output =
      expand(arg("output"),
             {batchSize, b.getIndexAttr(spec.qHeads), b.getIndexAttr(dim)},
             {{0, 1}, {2}});
  Value partials =
      expand(arg("partials"),
             {batchSize, b.getIndexAttr(spec.kvHeads), OpFoldResult(splits),
              b.getIndexAttr(group), b.getIndexAttr(dim + 2)},
             {{0, 1, 2, 3}, {4}});

  auto tensorOf = [&](Value buffer) -> Value {
    if (!buffer)
      return {};
    auto type = cast<MemRefType>(buffer.getType());
    return bufferization::ToTensorOp::create(
        b, RankedTensorType::get(type.getShape(), type.getElementType()),
        buffer, /*restrict=*/true, /*writable=*/false);
  };
  auto tensorType = [](Value buffer) -> Type {
    auto type = cast<MemRefType>(buffer.getType());
    return RankedTensorType::get(type.getShape(), type.getElementType());
  };
  auto attention = ld::KvDecodeAttentionOp::create(
      b, tensorType(output), tensorType(partials), tensorOf(query),
      tensorOf(keyCodes), tensorOf(keyScales), tensorOf(valueCodes),
      tensorOf(valueScales), tensorOf(seqLens), tensorOf(arg("block_table")),
      cast<ld::FormatAttrInterface>(formatAttr(&context, spec)),
      StringRef(spec.isFp8() ? (spec.perHead ? "per_head" : "per_tensor")
                             : "per_group"),
      uint64_t(spec.groupSize),
      StringRef(spec.convention == kv::ScaleConvention::Multiplier
                    ? "multiplier"
                    : "divisor"),
      llvm::APFloat(spec.softmaxScale), uint64_t(spec.splitTokens),
      StringRef(kv::dotKindName(spec.dot)));
  SmallVector<Value, 2> destinations = {output, partials};
  for (auto [result, destination] :
       llvm::zip(attention->getResults(), destinations))
    bufferization::MaterializeInDestinationOp::create(
        b, /*result=*/Type(), result, destination, /*restrict=*/true,
        /*writable=*/true);
  func::ReturnOp::create(b);

  DiagnosticText diagnostics(context);
  if (failed(verify(*module)))
    return compileError("the decode-attention module does not verify: " +
                        diagnostics.str());
  return module;
}

llvm::Error lowerKvAttentionToLoops(ModuleOp module) {
  return runLoweringPasses(module, {createLowbitAttentionToLoops},
                           "lowbit-attention-to-loops");
}

llvm::Error lowerKvAttentionForGpu(ModuleOp module) {
  std::string refusal;
  module.walk([&](ld::KvDecodeAttentionOp op) {
    if (refusal.empty())
      refusal = gpuDecodeAttentionRefusal(op);
  });
  if (!refusal.empty())
    return compileError("decode attention has no GPU kernel: " + refusal);
  return runLoweringPasses(module,
                           {createLowbitToGpu, createLowbitAttentionToLoops},
                           "the decode-attention GPU lowering");
}

namespace {

llvm::Expected<std::string> loweredText(const kv::KvAttentionSpec &spec,
                                        llvm::Error (*lower)(ModuleOp)) {
  ContextLease context = borrowContext();
  auto module = lowerModule(buildKvAttentionModule(*context, spec), lower);
  if (!module)
    return module.takeError();
  return moduleText(**module);
}

} // namespace

llvm::Expected<std::string>
kvAttentionLoopsText(const kv::KvAttentionSpec &spec) {
  return loweredText(spec, lowerKvAttentionToLoops);
}

llvm::Expected<std::string>
kvAttentionGpuText(const kv::KvAttentionSpec &spec) {
  return loweredText(spec, lowerKvAttentionForGpu);
}

llvm::Expected<std::unique_ptr<KvAttentionCpuKernel>>
compileKvAttentionForCpu(const kv::KvAttentionSpec &spec) {
  ContextLease context = borrowContext();
  auto module = lowerModule(buildKvAttentionModule(*context, spec),
                            lowerKvAttentionToLoops);
  if (!module)
    return module.takeError();
  auto executable = loopsModuleToHost(**module);
  if (!executable)
    return executable.takeError();
  return std::make_unique<KvAttentionCpuKernel>(
      spec, std::move(*executable),
      [](const kv::KvAttentionSpec &spec,
         const std::vector<HostBuffer> &buffers) {
        return kvAttentionSizesOf(spec, buffers).takeError();
      });
}

} // namespace lowbit::compiler
