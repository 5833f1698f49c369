//===- KernelKey.cpp - What a compiled kernel is specialized on -----------===//

#include "runtime/cache/KernelKey.h"

#include <algorithm>
#include <cstring>

#ifndef LOWBIT_VERSION_STRING
#error "LOWBIT_VERSION_STRING must be defined by the build"
#endif

namespace lowbit::runtime {

std::string_view lowbitVersion() { return LOWBIT_VERSION_STRING; }

std::string_view sizePolicyName(SizePolicy policy) {
  switch (policy) {
  case SizePolicy::Dynamic:
    return "dynamic";
  case SizePolicy::Static:
    return "static";
  case SizePolicy::Divisible16:
    return "div16";
  }
  return "unknown";
}

std::string KernelSignature::serialize() const {
  // One field per line, in a fixed order, with a format line first: the
  // text is hashed and stored in receipts, so any change here must bump
  // the "1" (which changes every hash, so old entries are simply unused).
  std::string text = "lowbit-kernel-key 2\n";
  auto line = [&](std::string_view name, std::string_view value) {
    text.append(name).append("=").append(value).append("\n");
  };
  line("spec", spec);
  line("chip", chip);
  line("features", features);
  line("input", inputDtype);
  line("rows", sizePolicyName(rowsPolicy));
  line("cols", sizePolicyName(colsPolicy));
  line("pointers", std::to_string(pointerCount));
  line("lowbit", lowbitVersion);
  line("compiler", compilerBuild);
  line("llvm", llvmVersion);
  line("pipeline", toHex64(pipelineHash));
  return text;
}

Expected<std::shared_ptr<const PreparedSignature>>
prepareSignature(KernelSignature signature) {
  if (signature.spec.empty())
    return makeError(ErrorCode::InvalidArgument, "kernel key: empty spec");
  if (signature.chip.empty())
    return makeError(ErrorCode::InvalidArgument, "kernel key: empty chip");
  if (signature.pointerCount < 0 || signature.pointerCount > 32)
    return makeError(ErrorCode::InvalidArgument,
                     "kernel key: pointerCount must be 0..32, got " +
                         std::to_string(signature.pointerCount));
  // The serialization is line based; a line break inside a field would let
  // two different signatures serialize to the same text.
  for (const std::string *field :
       {&signature.spec, &signature.chip, &signature.features,
        &signature.inputDtype, &signature.lowbitVersion,
        &signature.compilerBuild, &signature.llvmVersion}) {
    if (field->find_first_of("\r\n") != std::string::npos)
      return makeError(ErrorCode::InvalidArgument,
                       "kernel key: a field contains a line break: '" + *field +
                           "'");
  }
  auto prepared = std::make_shared<PreparedSignature>();
  prepared->fields = std::move(signature);
  prepared->text = prepared->fields.serialize();
  prepared->textHash = hash128(prepared->text);
  return std::shared_ptr<const PreparedSignature>(std::move(prepared));
}

namespace {

bool isAligned16(const void *pointer) {
  return (reinterpret_cast<uintptr_t>(pointer) & 15) == 0;
}

void specializeSize(SizePolicy policy, int64_t size, int64_t &value,
                    uint32_t &flags, uint32_t divisibleFlag) {
  switch (policy) {
  case SizePolicy::Dynamic:
    value = kDynamicSize;
    return;
  case SizePolicy::Static:
    value = size;
    return;
  case SizePolicy::Divisible16:
    value = kDynamicSize;
    if (size % 16 == 0)
      flags |= divisibleFlag;
    return;
  }
}

} // namespace

KernelKey makeKernelKey(std::shared_ptr<const PreparedSignature> signature,
                        int64_t rows, int64_t cols,
                        std::span<const void *const> pointers) {
  KernelKey key;
  const KernelSignature &fields = signature->signature();
  specializeSize(fields.rowsPolicy, rows, key.rowsValue, key.flags,
                 KernelKey::kRowsDivisible);
  specializeSize(fields.colsPolicy, cols, key.colsValue, key.flags,
                 KernelKey::kColsDivisible);
  size_t pointerCount =
      std::min<size_t>(size_t(fields.pointerCount), pointers.size());
  for (size_t index = 0; index < pointerCount; ++index)
    if (isAligned16(pointers[index]))
      key.alignedMask |= uint32_t(1) << index;

  // The key hash covers the signature's hash and the launch-time fields as
  // one fixed 40-byte little-endian record, so it costs two short XXH64
  // runs and no string work.
  uint64_t record[5] = {signature->hash().low, signature->hash().high,
                        uint64_t(key.rowsValue), uint64_t(key.colsValue),
                        (uint64_t(key.flags) << 32) | key.alignedMask};
  key.keyHash = hash128(record, sizeof(record));
  key.signaturePtr = std::move(signature);
  return key;
}

std::string KernelKey::serialize() const {
  std::string text = signaturePtr->serialized();
  auto sizeLine = [&](std::string_view name, SizePolicy policy, int64_t value,
                      bool divisible) {
    text.append(name).append(".value=");
    if (policy == SizePolicy::Static)
      text.append(std::to_string(value));
    else if (policy == SizePolicy::Divisible16)
      text.append(divisible ? "multiple-of-16" : "not-multiple-of-16");
    else
      text.append("dynamic");
    text.append("\n");
  };
  sizeLine("rows", signature().rowsPolicy, rowsValue, rowsDivisibleBy16());
  sizeLine("cols", signature().colsPolicy, colsValue, colsDivisibleBy16());
  text.append("aligned16=");
  for (int index = 0; index < signature().pointerCount; ++index)
    text.push_back((alignedMask >> index) & 1 ? '1' : '0');
  text.append("\n");
  return text;
}

bool KernelKey::operator==(const KernelKey &other) const {
  if (keyHash != other.keyHash || rowsValue != other.rowsValue ||
      colsValue != other.colsValue || flags != other.flags ||
      alignedMask != other.alignedMask)
    return false;
  if (signaturePtr == other.signaturePtr)
    return true;
  if (!signaturePtr || !other.signaturePtr)
    return false;
  // Same hash, different signature objects: compare the text, so a hash
  // collision can never return the wrong kernel.
  return signaturePtr->serialized() == other.signaturePtr->serialized();
}

} // namespace lowbit::runtime
