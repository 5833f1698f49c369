//===- JitKvLaunchTest.cpp - KvKernel::launch against the driver stub -----===//
//
// What KvKernel::launch hands cuLaunchKernel (grid, block, shared bytes,
// every kernel parameter: argument order, descriptors, scalars), for each
// KV kernel kind (kv_append, kv_dequantize and kv_attend of kv_int8 and
// kv_fp8, kivi_append, kivi_dequantize, kivi_attend contiguous and paged),
// against the launch of the same spec in an AOT bundle that `lowbit aot`
// wrote, resolved the way the bundle's runner does (aot::resolveLaunchFor,
// runtime/aot/Bundle.h). A "kv" entry resolves through the same
// aot::RankedLaunch as the JIT, so every memref descriptor is also checked
// against one written out by hand from the tensors' shapes. Runs in
// lowbit-jit-launch-tests' process (the stub as libcuda, no nvJitLink).
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"

#include "runtime/aot/Bundle.h"
#include "target/WorkspaceRows.h"
#include "tests/jit/CudaDriverStub.h"
#include "tests/jit/JitKvSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <unistd.h>

using namespace lowbit;
using namespace lowbit::testing;

namespace {

const bool kvEnvironmentSet = useCudaDriverStub(LOWBIT_CUDA_STUB);

/// One call of a spec: its buffers' shapes (fake device addresses).
struct KvCall {
  std::string spec;
  std::vector<KvTensor> tensors;
};

KvTensor fake(KvTensor tensor, size_t index) {
  tensor.data =
      reinterpret_cast<void *>(uintptr_t(0x7000000 + 0x100000 * index));
  return tensor;
}

std::vector<KvCall> calls() {
  std::vector<KvCall> result;
  for (const auto &[scheme, paged] :
       {std::pair{"kv_int8_g32", false}, std::pair{"kv_fp8_e4m3", true}}) {
    KvScenario scenario{scheme, paged};
    KvTestBuffer input = scenario.input(1), codes = scenario.emptyCodes(),
                 scales = scenario.emptyScales(1),
                 positions = scenario.positions(),
                 table = scenario.blockTable();
    KvTestBuffer out = KvTestBuffer::zeros(
        ElementType::F32, {KvScenario::kBatch, KvScenario::kKvHeads,
                           scenario.maxTokens(), KvScenario::kHeadDim});
    std::vector<KvTensor> append = {input.tensor(), codes.tensor(),
                                    scales.tensor(), positions.tensor()};
    std::vector<KvTensor> dequantize = {codes.tensor(), scales.tensor(),
                                        positions.tensor(), out.tensor()};
    if (paged) {
      append.push_back(table.tensor());
      dequantize.push_back(table.tensor());
    }
    KvTestBuffer query = scenario.query(2), lens = scenario.seqLens();
    KvTestBuffer output = KvTestBuffer::zeros(
        ElementType::F32,
        {KvScenario::kBatch * KvScenario::kQHeads, KvScenario::kHeadDim});
    // One split (at most 16 tokens); G = 2.
    KvTestBuffer partials = KvTestBuffer::zeros(
        ElementType::F32,
        {KvScenario::kBatch * KvScenario::kQHeads, KvScenario::kHeadDim + 2});
    std::vector<KvTensor> attend = {query.tensor(),
                                    codes.tensor2d(),
                                    scenario.attendScales(scales),
                                    codes.tensor2d(),
                                    scenario.attendScales(scales),
                                    lens.tensor()};
    if (paged)
      attend.push_back(table.tensor());
    attend.push_back(output.tensor());
    attend.push_back(partials.tensor());
    for (auto [spec, tensors] :
         {std::pair{scenario.appendSpec(), append},
          std::pair{scenario.dequantizeSpec(), dequantize},
          std::pair{scenario.attendSpec(), attend}}) {
      for (size_t i = 0; i < tensors.size(); ++i)
        tensors[i] = fake(tensors[i], i);
      result.push_back({spec, tensors});
    }
  }
  // KIVI: buffers sized from the kernel's parameters (tensorsFor).
  result.push_back({"kivi_append kv_kivi_int4 group=32 residual=128 "
                    "per_channel from=f16 layout=contiguous heads=2 "
                    "head_dim=40",
                    {}});
  result.push_back({"kivi_dequantize kv_kivi_int2 group=32 residual=0 "
                    "per_token to=f32 layout=paged heads=2 head_dim=40",
                    {}});
  // KIVI decode attention (its GPU form: the loops mapped one thread per
  // unit), contiguous and paged, two splits of 16 tokens.
  result.push_back({"kivi_attend kv_kivi_int4 group=32 residual=128 "
                    "keys=per_channel q=f16 q_heads=4 kv_heads=2 head_dim=40 "
                    "split=16",
                    {}});
  result.push_back({"kivi_attend kv_kivi_int2 group=32 residual=32 "
                    "keys=per_token layout=paged q_heads=2 kv_heads=2 "
                    "head_dim=40 split=16",
                    {}});
  return result;
}

/// One fake buffer per parameter, each call-fixed size from one table
/// (group_rows = ceil(cache_tokens / 32)).
std::vector<KvTensor> tensorsFor(const KvKernel &kernel) {
  return fakeKvTensors(kernel,
                       {{"batch", 2},
                        {"new_tokens", 3},
                        {"cache_tokens", 32},
                        {"pages", 3},
                        {"max_blocks", 2},
                        {"group_rows", 1},
                        {"splits", 2}},
                       0x7000000);
}

/// The bundle `lowbit aot` writes for the calls' specs (PTX only).
aot::Manifest aotBundle(const std::vector<KvCall> &all,
                        const std::string &directory) {
  std::string command = std::string(LOWBIT_CLI) + " aot";
  for (const KvCall &call : all)
    command += " '" + call.spec + "'";
  command += " --target sm_90a --no-cubin --out " + directory + " > " +
             directory + ".log 2>&1";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  std::string error;
  std::optional<aot::Manifest> manifest = aot::readManifest(directory, &error);
  INFO(error);
  REQUIRE(manifest);
  REQUIRE(manifest->entries.size() == all.size());
  return *manifest;
}

/// The AOT runner's sizes for one call: a "kv" entry's ranked dims, an
/// "attention" entry's [rows, cols].
aot::SizeInstance sizeOf(const aot::BundleEntry &entry, const KvCall &call) {
  aot::SizeInstance size;
  for (const KvTensor &tensor : call.tensors) {
    std::vector<int64_t> dims(tensor.shape.begin(),
                              tensor.shape.begin() + tensor.rank);
    int64_t rows = 1;
    for (size_t axis = 0; axis + 1 < dims.size(); ++axis)
      rows *= dims[axis];
    size.shapes.push_back({rows, dims.back()});
    if (entry.kind == "kv")
      size.dims.push_back(dims);
  }
  return size;
}

bool sameParameters(const LaunchRecord &record,
                    const aot::PackedArguments &packed) {
  if (size_t(record.params) != packed.slots.size())
    return false;
  for (size_t i = 0; i < packed.slots.size(); ++i)
    if (record.values[i] != packed.slots[i])
      return false;
  return true;
}

/// The record's kernel parameters against descriptors written out by hand
/// from the tensors (not by runtime/aot, which both the JIT and the
/// runner use): per memref operand {address, address, 0, shape[0..N),
/// strides[0..N)} with row-major strides, the workspace's {w, w, 0, 1, W,
/// W, 1}, a scalar one slot. The count of memref descriptors checked, or
/// -1 on the first slot that differs.
long checkDescriptorsByHand(const LaunchRecord &record,
                            const aot::Launch &launch,
                            const std::vector<KvTensor> &tensors,
                            int64_t workspaceWords) {
  size_t slot = 0;
  long descriptors = 0;
  auto expect = [&](uint64_t value) {
    return slot < size_t(record.params) && record.values[slot++] == value;
  };
  for (const aot::Operand &operand : launch.operands) {
    if (operand.memref < 0) {
      ++slot;
      continue;
    }
    if (size_t(operand.memref) == tensors.size()) {
      uint64_t workspace =
          slot < size_t(record.params) ? record.values[slot] : 0;
      uint64_t words = uint64_t(workspaceWords);
      for (uint64_t value : {workspace, workspace, uint64_t(0), uint64_t(1),
                             words, words, uint64_t(1)})
        if (!expect(value))
          return -1;
      continue;
    }
    const KvTensor &tensor = tensors[size_t(operand.memref)];
    uint64_t address = uint64_t(uintptr_t(tensor.data));
    if (!expect(address) || !expect(address) || !expect(0))
      return -1;
    for (size_t axis = 0; axis < tensor.rank; ++axis)
      if (!expect(uint64_t(tensor.shape[axis])))
        return -1;
    for (size_t axis = 0; axis < tensor.rank; ++axis) {
      uint64_t stride = 1;
      for (size_t inner = axis + 1; inner < tensor.rank; ++inner)
        stride *= uint64_t(tensor.shape[inner]);
      if (!expect(stride))
        return -1;
    }
    ++descriptors;
  }
  return slot == size_t(record.params) ? descriptors : -1;
}

} // namespace

TEST_CASE("launch: KV kernels launch as their AOT bundle does",
          "[launch][kv]") {
  REQUIRE(kvEnvironmentSet);
  StubDriver stub;
  REQUIRE(stub.load(LOWBIT_CUDA_STUB));
  std::vector<KvCall> all = calls();
  std::string directory = (std::filesystem::temp_directory_path() /
                           ("lowbit-jit-kv-aot-" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(directory);
  aot::Manifest manifest = aotBundle(all, directory);

  auto jit = uncachedJit();
  REQUIRE(jit.ok());
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  void *stream = reinterpret_cast<void *>(0x53);
  size_t kinds = 0;
  long descriptorsByHand = 0;
  for (size_t c = 0; c < all.size(); ++c) {
    KvCall &call = all[c];
    const aot::BundleEntry &entry = manifest.entries[c];
    INFO(call.spec);
    auto kernel = (*jit)->getKv(call.spec, *target);
    INFO((kernel.ok() ? std::string() : kernel.error().message));
    REQUIRE(kernel.ok());
    REQUIRE(entry.spec == kernel->spec());
    if (call.tensors.empty())
      call.tensors = tensorsFor(*kernel);
    CHECK(kernel->workspaceWords() == entry.workspaceWords);
    stub.reset();
    Status launched = kernel->launch(stream, call.tensors);
    INFO((launched.ok() ? std::string() : launched.error().message));
    REQUIRE(launched.ok());
    REQUIRE(stub.count() == long(entry.launches.size()));

    aot::SizeInstance size = sizeOf(entry, call);
    std::vector<uint64_t> addresses;
    for (const KvTensor &tensor : call.tensors)
      addresses.push_back(uint64_t(uintptr_t(tensor.data)));
    // The same launches with two buffers swapped: what some record must
    // not match (the comparison sees argument order; a step that does not
    // take them, attention's merge, is the same).
    std::vector<uint64_t> swapped = addresses;
    std::swap(swapped[1], swapped[2]);
    bool swapSeen = false;
    for (size_t s = 0; s < entry.launches.size(); ++s) {
      const aot::Launch &launch = entry.launches[s];
      const LaunchRecord &record = *stub.at(long(s));
      std::optional<aot::LaunchSizes> sizes =
          aot::evaluateLaunchFor(launch, size, &error, entry.workspaceWords);
      std::optional<aot::PackedArguments> packed = aot::packArgumentsFor(
          launch, addresses, size, &error, 0, entry.workspaceWords);
      std::optional<aot::PackedArguments> wrong = aot::packArgumentsFor(
          launch, swapped, size, &error, 0, entry.workspaceWords);
      INFO(error);
      REQUIRE((sizes && packed && wrong));
      CHECK(record.stream == stream);
      for (int i = 0; i < 3; ++i) {
        CHECK(record.grid[i] == unsigned(sizes->grid[size_t(i)]));
        CHECK(record.block[i] == unsigned(sizes->block[size_t(i)]));
      }
      CHECK(record.shared == unsigned(sizes->sharedBytes));
      CHECK(sameParameters(record, *packed));
      swapSeen |= !sameParameters(record, *wrong);
      long byHand = checkDescriptorsByHand(record, launch, call.tensors,
                                           entry.workspaceWords);
      CHECK(byHand >= 0);
      descriptorsByHand += byHand;
    }
    CHECK(swapSeen);
    ++kinds;
  }
  CHECK(kinds == 10);
  // Every launch's memref operands were written out by hand above.
  CHECK(descriptorsByHand > 0);

  // A buffer of the wrong shape never reaches the driver.
  auto append = (*jit)->getKv(all[0].spec, *target);
  REQUIRE(append.ok());
  std::vector<KvTensor> bad = all[0].tensors;
  bad[1].shape[0] = 3;
  stub.reset();
  Status refused = append->launch(stream, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::InvalidArgument);
  CHECK(stub.count() == 0);
  std::filesystem::remove_all(directory);
  std::filesystem::remove(directory + ".log");
}

namespace {

/// The address of the [1, words] workspace descriptor {a, a, 0, 1, words,
/// words, 1} among a record's kernel parameters (where outlining put it),
/// or nullopt.
std::optional<uint64_t> workspaceIn(const LaunchRecord &record, int64_t words) {
  uint64_t w = uint64_t(words);
  for (int i = 0; i + 7 <= record.params; ++i) {
    const uint64_t *d = &record.values[i];
    if (d[0] == d[1] && d[2] == 0 && d[3] == 1 && d[4] == w && d[5] == w &&
        d[6] == 1)
      return d[0];
  }
  return std::nullopt;
}

/// Whether the first `words` i32 words at `address` (the stub's host
/// memory) are zero.
bool zeroAt(uint64_t address, int64_t words) {
  const int32_t *at = reinterpret_cast<const int32_t *>(uintptr_t(address));
  return std::all_of(at, at + words, [](int32_t word) { return word == 0; });
}

} // namespace

TEST_CASE("launch: a matmul behind prologues sizes its workspace per call",
          "[launch][kv][matmul][workspace]") {
  REQUIRE(kvEnvironmentSet);
  StubDriver stub;
  REQUIRE(stub.load(LOWBIT_CUDA_STUB));
  auto jit = uncachedJit();
  REQUIRE(jit.ok());
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  const int64_t k = 256;
  // X's codes go through the workspace (docs/kernel-abi.md, "Workspace").
  auto growing = (*jit)->getKv(
      "rmsnorm(eps=1e-6) | matmul w=scheme(format=int8,scale=per_token) "
      "a=scheme(format=int8,scale=per_token) from=bf16 n=45 k=256",
      *target);
  INFO((growing.ok() ? std::string() : growing.error().message));
  REQUIRE(growing.ok());
  CHECK(growing->workspaceWords() > 0);
  CHECK(growing->workspaceWordsFor(17, k) > growing->workspaceWords());
  CHECK(growing->workspaceWordsFor(128, k) > growing->workspaceWordsFor(17, k));
  // A per-tensor pair reduces X's amax through a fixed workspace.
  auto fixed = (*jit)->getKv("matmul w=fp8_e4m3 a=fp8_e4m3 from=bf16", *target);
  INFO((fixed.ok() ? std::string() : fixed.error().message));
  REQUIRE(fixed.ok());
  REQUIRE(fixed->workspaceWords() > 0);
  CHECK(fixed->workspaceWordsFor(4096, 4096) == fixed->workspaceWords());

  void *stream = reinterpret_cast<void *>(0x57);
  auto launchGrowing = [&](int64_t m) {
    std::vector<KvTensor> tensors =
        fakeKvTensors(*growing, {{"m", m}}, 0x9000000);
    stub.reset();
    Status launched = growing->launch(stream, tensors);
    INFO((launched.ok() ? std::string() : launched.error().message));
    REQUIRE(launched.ok());
    REQUIRE(stub.count() >= 2);
    // Every launch of the sequence sees the same [1, WORDS] of this M.
    int64_t words = growing->workspaceWordsFor(m, k);
    std::optional<uint64_t> address = workspaceIn(*stub.at(0), words);
    REQUIRE(address);
    for (long i = 1; i < stub.count(); ++i)
      CHECK(workspaceIn(*stub.at(i), words) == address);
    // A new buffer: all zero (the stub runs no kernel).
    CHECK(zeroAt(*address, words));
    return *address;
  };
  uint64_t rowsBuffer = launchGrowing(17);
  // What the kernels may leave in X's region: anything. A fixed-size
  // kernel on the same stream must still find its words zero.
  int32_t *words = reinterpret_cast<int32_t *>(uintptr_t(rowsBuffer));
  for (int64_t w = workspace_abi::kRowRegionWord;
       w < growing->workspaceWordsFor(17, k); ++w)
    words[w] = -1;
  stub.reset();
  Status launched = fixed->launch(stream, fakeKvTensors(*fixed,
                                                        {{"m", 17},
                                                         {"n", 45},
                                                         {"k", k},
                                                         {"code_cols", k},
                                                         {"scale_rows", 1},
                                                         {"scale_cols", 1}},
                                                        0x9000000));
  INFO((launched.ok() ? std::string() : launched.error().message));
  REQUIRE(launched.ok());
  REQUIRE(stub.count() >= 1);
  std::optional<uint64_t> fixedWorkspace =
      workspaceIn(*stub.at(0), fixed->workspaceWords());
  REQUIRE(fixedWorkspace);
  CHECK(*fixedWorkspace != rowsBuffer);
  CHECK(zeroAt(*fixedWorkspace, fixed->workspaceWords()));
  // A larger M grows the stream's second buffer.
  CHECK(launchGrowing(128) != rowsBuffer);

  // X too large for a 4 GiB workspace: refused before any launch.
  std::vector<KvTensor> huge =
      fakeKvTensors(*growing, {{"m", int64_t(1) << 32}}, 0);
  for (size_t i = 0; i < huge.size(); ++i) // far enough apart not to alias
    huge[i].data = reinterpret_cast<void *>(uintptr_t(i + 1) << 44);
  stub.reset();
  Status refused = growing->launch(stream, huge);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(refused.error().message, Catch::Matchers::Contains("workspace"));
  CHECK(stub.count() == 0);
}
