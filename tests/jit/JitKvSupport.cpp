//===- JitKvSupport.cpp - KV-cache test caches for lowbit::Jit::getKv -----===//

#include "tests/jit/JitKvSupport.h"

#include <cstdlib>

#include "format/Codec.h"
#include "runtime/jit/BufferAliasing.h"
#include "tests/reference/TestHelpers.h"

#include <cstring>
#include <numeric>

namespace lowbit::testing {

namespace {
/// The runtime's own element sizes (runtime/jit/BufferAliasing.h).
size_t bytesOf(ElementType element) { return jit::elementBytes(element); }

int64_t product(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<>());
}
} // namespace

KvTestBuffer KvTestBuffer::zeros(ElementType element,
                                 std::vector<int64_t> shape) {
  KvTestBuffer buffer;
  buffer.element = element;
  buffer.bytes.assign(size_t(product(shape)) * bytesOf(element), 0);
  buffer.shape = std::move(shape);
  return buffer;
}

KvTensor KvTestBuffer::tensor() {
  KvTensor tensor;
  tensor.data = bytes.data();
  tensor.element = element;
  tensor.rank = shape.size();
  std::copy(shape.begin(), shape.end(), tensor.shape.begin());
  return tensor;
}

KvTensor KvTestBuffer::tensor2d() {
  KvTensor tensor;
  tensor.data = bytes.data();
  tensor.element = element;
  tensor.rank = 2;
  tensor.shape[1] = shape.back();
  tensor.shape[0] = product(shape) / shape.back();
  return tensor;
}

std::string KvScenario::appendSpec() const {
  return "kv_append " + scheme +
         " from=f16 layout=" + (paged ? "paged" : "contiguous") +
         " heads=2 head_dim=64";
}

std::string KvScenario::dequantizeSpec() const {
  return "kv_dequantize " + scheme +
         " to=f32 layout=" + (paged ? "paged" : "contiguous") +
         " heads=2 head_dim=64";
}

std::string KvScenario::attendSpec() const {
  return "kv_attend " + scheme +
         " q=f32 layout=" + (paged ? "paged" : "contiguous") +
         " q_heads=4 kv_heads=2 head_dim=64";
}

int64_t KvScenario::maxTokens() const { return paged ? 16 : 8; }

std::vector<int64_t> KvScenario::cacheShape() const {
  return paged ? std::vector<int64_t>{3, kKvHeads, 16, kHeadDim}
               : std::vector<int64_t>{kBatch, kKvHeads, 8, kHeadDim};
}

std::vector<int64_t> KvScenario::scalesShape() const {
  if (!isInt8())
    return {1};
  std::vector<int64_t> shape = cacheShape();
  shape.back() = kHeadDim / 32;
  return shape;
}

KvTestBuffer KvScenario::input(uint64_t seed) const {
  KvTestBuffer buffer = KvTestBuffer::zeros(
      ElementType::F16, {kBatch, kKvHeads, kNewTokens, kHeadDim});
  test::Random random(seed);
  auto *values = buffer.as<uint16_t>();
  for (size_t i = 0; i < buffer.bytes.size() / 2; ++i)
    values[i] = floatToHalf(4.0f * random.uniform());
  return buffer;
}

KvTestBuffer KvScenario::positions() const {
  KvTestBuffer buffer = KvTestBuffer::zeros(ElementType::I32, {kBatch});
  buffer.as<int32_t>()[1] = 3;
  return buffer;
}

KvTestBuffer KvScenario::blockTable() const {
  KvTestBuffer buffer = KvTestBuffer::zeros(ElementType::I32, {kBatch, 1});
  buffer.as<int32_t>()[0] = 2;
  buffer.as<int32_t>()[1] = 0;
  return buffer;
}

KvTestBuffer KvScenario::emptyCodes() const {
  return KvTestBuffer::zeros(ElementType::I8, cacheShape());
}

KvTestBuffer KvScenario::emptyScales(float fp8Scale) const {
  KvTestBuffer buffer = KvTestBuffer::zeros(ElementType::F32, scalesShape());
  if (!isInt8())
    buffer.as<float>()[0] = fp8Scale;
  return buffer;
}

KvTestBuffer KvScenario::seqLens() const {
  KvTestBuffer buffer = KvTestBuffer::zeros(ElementType::I32, {1, kBatch});
  buffer.as<int32_t>()[0] = int32_t(kNewTokens);
  buffer.as<int32_t>()[1] = int32_t(3 + kNewTokens);
  return buffer;
}

KvTestBuffer KvScenario::query(uint64_t seed) const {
  KvTestBuffer buffer =
      KvTestBuffer::zeros(ElementType::F32, {kBatch * kQHeads, kHeadDim});
  test::Random random(seed);
  for (size_t i = 0; i < buffer.bytes.size() / 4; ++i)
    buffer.as<float>()[i] = random.uniform();
  return buffer;
}

KvTensor KvScenario::attendScales(KvTestBuffer &scales) const {
  if (isInt8())
    return scales.tensor2d();
  KvTensor tensor = scales.tensor();
  tensor.rank = 2;
  tensor.shape = {1, 1};
  return tensor;
}

bool useCudaDriverStub(const char *stubPath) {
  setenv("LOWBIT_LIBCUDA", stubPath, 1);
  setenv("LOWBIT_LIBNVJITLINK", "/nonexistent/libnvJitLink.so", 1);
  return true;
}

Expected<std::unique_ptr<Jit>> uncachedJit() {
  JitOptions options;
  options.cacheMode = runtime::CacheMode::Off;
  return Jit::create(options);
}

std::vector<KvTensor>
fakeKvTensors(const KvKernel &kernel,
              const std::map<std::string_view, int64_t> &sizes,
              uintptr_t base) {
  std::vector<KvTensor> tensors;
  for (const KvParamInfo &param : kernel.params()) {
    KvTensor tensor;
    tensor.element = param.element;
    tensor.rank = param.shape.size();
    for (size_t d = 0; d < tensor.rank; ++d)
      tensor.shape[d] = param.shape[d] >= 0
                            ? param.shape[d]
                            : sizes.at(kvDimName(param.shape[d]));
    tensor.data = reinterpret_cast<void *>(base + 0x100000 * tensors.size());
    tensors.push_back(tensor);
  }
  return tensors;
}

} // namespace lowbit::testing
