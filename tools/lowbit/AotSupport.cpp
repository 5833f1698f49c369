//===- AotSupport.cpp - lowbit aot: what every entry kind shares ----------===//

#include "tools/lowbit/AotSupport.h"

#include "runtime/cache/Hash.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/driver/NvJitLink.h"

#include <fmt/format.h>

namespace lowbit::cli {

// The runner packs every slot as 8 bytes, so a mismatch here would be a
// silent misread there.
bool checkPtxSignature(const std::string &ptx, const aot::Launch &launch,
                       const MemrefSlots &slotsOf, std::string &error) {
  std::string marker = ".entry " + launch.entry + "(";
  size_t start = ptx.find(marker);
  if (start == std::string::npos) {
    error = "entry '" + launch.entry + "' not found in the PTX";
    return false;
  }
  size_t end = ptx.find(')', start);
  std::string_view signature(ptx.data() + start, end - start);
  size_t params = 0, wide = 0;
  for (size_t at = signature.find(".param"); at != std::string_view::npos;
       at = signature.find(".param", at + 1)) {
    ++params;
    std::string_view type = signature.substr(at + 6, 5);
    if (type == " .u64" || type == " .b64" || type == " .s64")
      ++wide;
  }
  size_t expected = 0, expectedWide = 0;
  for (const aot::Operand &operand : launch.operands) {
    size_t slots = operand.memref >= 0 ? slotsOf(operand.memref) : 1;
    expected += slots;
    if (operand.memref >= 0 || operand.bits == 64)
      expectedWide += slots;
  }
  if (params != expected || wide != expectedWide) {
    error = fmt::format("entry '{}' has {} parameters ({} of 64 bits); the "
                        "manifest's operands expand to {} ({} of 64 bits)",
                        launch.entry, params, wide, expected, expectedWide);
    return false;
  }
  return true;
}

std::optional<std::vector<aot::Launch>>
checkedLaunchesFromPlan(const launch::LaunchPlan &plan, const std::string &ptx,
                        const MemrefSlots &slotsOf, std::string &error) {
  Expected<std::vector<aot::Launch>> launches = aot::launchesFromPlan(plan);
  if (!launches) {
    error = launches.error().message;
    return std::nullopt;
  }
  for (const aot::Launch &launch : *launches)
    if (!checkPtxSignature(ptx, launch, slotsOf, error))
      return std::nullopt;
  return std::move(*launches);
}

bool stageKernelImages(aot::BundleEntry &entry, const std::string &stem,
                       bool keyedStem, const std::string &ptx,
                       const AotOptions &options,
                       std::set<std::string> &usedStems,
                       runtime::StagedFiles &staged, std::string &error) {
  std::string keyText = entry.spec + "\n" + options.target.str() + "\n" +
                        std::string(runtime::lowbitVersion()) + "\n" + ptx;
  entry.key = runtime::toHex64(
      runtime::xxh64(keyText.data(), keyText.size(), /*seed=*/0));
  entry.name = stem;
  if (!usedStems.insert(entry.name).second || keyedStem) {
    entry.name += "-" + entry.key.substr(0, 8);
    usedStems.insert(entry.name);
  }
  const std::string &directory = options.outDirectory;
  entry.ptxFile = entry.name + ".ptx";
  if (!staged.stage(directory + "/" + entry.ptxFile, ptx, &error))
    return false;
  if (!options.cubin)
    return true;
  lowbit::Expected<runtime::Cubin> cubin =
      runtime::linkPtx(ptx, options.target.chip);
  if (!cubin) {
    error =
        "nvJitLink: " + cubin.error().message + " (--no-cubin writes PTX only)";
    return false;
  }
  entry.cubinFile = entry.name + ".cubin";
  if (!staged.stage(directory + "/" + entry.cubinFile, cubin->bytes, &error))
    return false;
  for (aot::Launch &launch : entry.launches)
    for (const runtime::KernelResources &r : cubin->allKernels)
      if (r.function == launch.entry)
        launch.resources = {r.registers, r.spillStoreBytes, r.spillLoadBytes,
                            r.stackBytes, r.sharedBytes};
  return true;
}

npy::DType npyTypeFor(const std::string &element) {
  if (element == "f32")
    return npy::DType::F32;
  if (element == "f16")
    return npy::DType::F16;
  if (element == "bf16")
    return npy::DType::U16;
  if (element == "i32")
    return npy::DType::I32;
  return npy::DType::U8;
}

bool stageNpy(const std::string &directory, const std::string &file,
              npy::DType dtype, std::vector<int64_t> shape,
              std::vector<uint8_t> bytes, runtime::StagedFiles &staged,
              std::string &error) {
  npy::Array array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.bytes = std::move(bytes);
  std::optional<std::string> serialized = npy::serializeNpy(array, &error);
  return serialized &&
         staged.stage(directory + "/" + file, *serialized, &error);
}

} // namespace lowbit::cli
