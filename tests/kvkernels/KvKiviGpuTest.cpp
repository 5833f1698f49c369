//===- KvKiviGpuTest.cpp - KIVI kernels' GPU modules: emulator and PTX ----===//
//
// The cases of KvKiviCpuKernelTest.cpp on the GPU modules (lowerToNvvm, the
// GPU tail's generic mapping; the append's flush and ring write are two
// launches) in the GPU emulator, bit for bit against KiviStream; and the
// PTX of every KIVI kernel (int4/int2 x keys per channel/values per token x
// append/dequantize x contiguous/paged) assembles with ptxas for sm_80,
// sm_89, sm_90a and sm_100a.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"
#include "KvEmulatorRun.h"
#include "KvKernelTestSupport.h"
#include "KvKiviTestSupport.h"

#include "runtime/compiler/KvFamilyCompile.h"

#include <catch2/catch.hpp>

#include <map>
#include <memory>

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::kvtest;

namespace {

Target kiviTarget(const std::string &name) {
  std::string error;
  std::optional<Target> target = parseTarget(name, &error);
  if (!target)
    throw std::runtime_error(error);
  return *target;
}

/// The emulator on `targetName` as a KiviRunner; each (spec, target)
/// compiled once per process.
KiviRunner kiviEmulatorOn(const std::string &targetName) {
  return [targetName](const KiviKernelSpec &spec,
                      const std::vector<compiler::KvBuffer> &buffers) {
    static std::map<std::string, std::unique_ptr<KvEmulatedKernel>> cache;
    std::unique_ptr<KvEmulatedKernel> &entry =
        cache[targetName + " " + formatKiviKernelSpec(spec)];
    if (!entry) {
      std::string error;
      entry =
          KvEmulatedKernel::compileKivi(spec, kiviTarget(targetName), error);
      if (!entry)
        return error;
    }
    emulator::Device device;
    return entry->run(device, buffers);
  };
}

void checkEveryKiviKernelAssembles(const char *targetName) {
  bool haveAssembler = !test::ptxasPath().empty();
  Target target = kiviTarget(targetName);
  int assembled = 0;
  for (int bits : {4, 2})
    for (bool perChannel : {true, false})
      for (KvKernelOp op : {KvKernelOp::Append, KvKernelOp::Dequantize})
        for (KvLayout layout : {KvLayout::Contiguous, KvLayout::Paged}) {
          KiviKernelSpec spec;
          spec.op = op;
          spec.side = {bits, 32, 128, perChannel};
          spec.residualType = KvValueType::BF16;
          spec.outputType = KvValueType::F16;
          spec.layout = layout;
          spec.heads = 8;
          spec.headDim = 128;
          INFO(targetName << ": " << formatKiviKernelSpec(spec));
          auto ptx = compiler::compileKvFamilyToPtx(spec, target);
          REQUIRE(errorText(ptx.takeError()) == "");
          CHECK(ptx->ptx.find(".entry") != std::string::npos);
          if (!haveAssembler)
            continue;
          test::checkAssembles(ptx->ptx, targetName);
          ++assembled;
        }
  if (haveAssembler)
    CHECK(assembled == 2 * 2 * 2 * 2);
}

} // namespace

TEST_CASE("kv_kivi_int4 in the GPU emulator", "[kiviemu]") {
  checkKiviEverywhere(kiviEmulatorOn("sm_90a"), 4, 32, 128, 40,
                      KvValueType::F16, {130, 1, 2, 64, 37});
  checkKiviEverywhere(kiviEmulatorOn("sm_80"), 4, 5, 0, 13, KvValueType::BF16,
                      {70, 1, 30, 3, 33});
}

TEST_CASE("kv_kivi_int2 in the GPU emulator", "[kiviemu]") {
  checkKiviEverywhere(kiviEmulatorOn("sm_90a"), 2, 32, 0, 40, KvValueType::BF16,
                      {70, 1, 30, 3, 33});
}

TEST_CASE("every KIVI kernel's PTX assembles for sm_80", "[kiviptx]") {
  checkEveryKiviKernelAssembles("sm_80");
}
TEST_CASE("every KIVI kernel's PTX assembles for sm_89", "[kiviptx]") {
  checkEveryKiviKernelAssembles("sm_89");
}
TEST_CASE("every KIVI kernel's PTX assembles for sm_90a", "[kiviptx]") {
  checkEveryKiviKernelAssembles("sm_90a");
}
TEST_CASE("every KIVI kernel's PTX assembles for sm_100a", "[kiviptx]") {
  checkEveryKiviKernelAssembles("sm_100a");
}

TEST_CASE("KIVI appends skip tokens outside the cache (GPU emulator)",
          "[kiviemu]") {
  checkKiviSkipsOutsideTheCache(kiviEmulatorOn("sm_90a"));
}
