//===- Target.cpp - Code generation targets: chips and PTX versions -------===//
//
// The minimum PTX versions below were read off LLVM 22's NVPTX backend (llc
// -mcpu=<chip> -mattr=+ptxNN on an empty module: the oldest version it does
// not reject). Each one below that makes LLVM abort, not return an error.
//
//===----------------------------------------------------------------------===//

#include "target/Target.h"

#include <algorithm>
#include <charconv>

namespace lowbit {

const std::vector<ChipInfo> &knownChips() {
  static const std::vector<ChipInfo> chips = {
      {"sm_80", 80, FeatureSet::Portable, 70},
      {"sm_86", 86, FeatureSet::Portable, 71},
      {"sm_87", 87, FeatureSet::Portable, 74},
      {"sm_89", 89, FeatureSet::Portable, 78},
      {"sm_90", 90, FeatureSet::Portable, 78},
      {"sm_90a", 90, FeatureSet::ArchSpecific, 80},
      {"sm_100", 100, FeatureSet::Portable, 86},
      {"sm_100a", 100, FeatureSet::ArchSpecific, 86},
      {"sm_100f", 100, FeatureSet::FamilySpecific, 88},
      {"sm_101a", 101, FeatureSet::ArchSpecific, 86},
      {"sm_103a", 103, FeatureSet::ArchSpecific, 88},
      {"sm_120", 120, FeatureSet::Portable, 87},
      {"sm_120a", 120, FeatureSet::ArchSpecific, 87},
      {"sm_120f", 120, FeatureSet::FamilySpecific, 88},
      {"sm_121a", 121, FeatureSet::ArchSpecific, 88},
  };
  return chips;
}

const std::vector<unsigned> &knownPtxVersions() {
  // llc -march=nvptx64 -mattr=help lists ptx70..ptx78, ptx80..ptx88, ptx90.
  static const std::vector<unsigned> versions = {70, 71, 72, 73, 74, 75, 76,
                                                 77, 78, 80, 81, 82, 83, 84,
                                                 85, 86, 87, 88, 90};
  return versions;
}

std::vector<unsigned> ptxVersionsFor(const ChipInfo &chip) {
  std::vector<unsigned> versions;
  for (unsigned version : knownPtxVersions())
    if (version >= chip.minPtxVersion)
      versions.push_back(version);
  return versions;
}

const ChipInfo *lookupChip(std::string_view name) {
  for (const ChipInfo &chip : knownChips())
    if (chip.name == name)
      return &chip;
  return nullptr;
}

std::string ptxVersionText(unsigned ptxVersion) {
  return std::to_string(ptxVersion / 10) + "." +
         std::to_string(ptxVersion % 10);
}

std::string Target::str() const {
  if (isCpu())
    return "cpu";
  return chip + "+ptx" + std::to_string(ptxVersion);
}

unsigned defaultPtxVersion(const ChipInfo &chip) {
  if (chip.smVersion >= 89 && chip.minPtxVersion < 81)
    return 81;
  return chip.minPtxVersion;
}

namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

std::string knownChipList() {
  std::string list;
  for (const ChipInfo &chip : knownChips()) {
    if (!list.empty())
      list += ", ";
    list += chip.name;
  }
  return list;
}

} // namespace

std::optional<Target> parseTarget(std::string_view text, std::string *error) {
  if (text == "cpu")
    return Target{};
  std::string_view chipName = text, ptxText;
  size_t separator = text.find_first_of("+:");
  if (separator != std::string_view::npos) {
    chipName = text.substr(0, separator);
    ptxText = text.substr(separator + 1);
  }
  if (chipName == "cpu") {
    setError(error, "target '" + std::string(text) +
                        "': the CPU target takes no PTX version; write cpu "
                        "(a PTX version goes with an NVIDIA chip: "
                        "sm_89+ptx81)");
    return std::nullopt;
  }
  const ChipInfo *chip = lookupChip(chipName);
  if (!chip) {
    setError(error, "unknown target '" + std::string(chipName) +
                        "'; known: cpu, " + knownChipList());
    return std::nullopt;
  }
  Target target;
  target.kind = Target::Kind::Nvidia;
  target.chip = std::string(chip->name);
  target.ptxVersion = defaultPtxVersion(*chip);
  if (separator == std::string_view::npos)
    return target;
  unsigned version = 0;
  auto [end, status] =
      std::from_chars(ptxText.data() + std::min<size_t>(3, ptxText.size()),
                      ptxText.data() + ptxText.size(), version);
  if (ptxText.substr(0, 3) != "ptx" || status != std::errc() ||
      end != ptxText.data() + ptxText.size() || ptxText.size() <= 3) {
    setError(error, "malformed PTX version '" + std::string(ptxText) +
                        "' in target '" + std::string(text) +
                        "'; expected e.g. sm_89+ptx81");
    return std::nullopt;
  }
  target.ptxVersion = version;
  return target;
}

bool validateTarget(const Target &target, std::string *error) {
  if (target.isCpu())
    return true;
  const ChipInfo *chip = lookupChip(target.chip);
  if (!chip) {
    setError(error,
             "unknown chip '" + target.chip + "'; known: " + knownChipList());
    return false;
  }
  if (target.ptxVersion < chip->minPtxVersion) {
    setError(error, target.chip +
                        " needs PTX >= " + ptxVersionText(chip->minPtxVersion) +
                        "; asked for " + ptxVersionText(target.ptxVersion));
    return false;
  }
  if (target.ptxVersion > kMaxPtxVersion) {
    setError(error, "PTX " + ptxVersionText(target.ptxVersion) +
                        " is newer than LLVM 22 can emit (<= " +
                        ptxVersionText(kMaxPtxVersion) + ")");
    return false;
  }
  const std::vector<unsigned> &known = knownPtxVersions();
  if (std::find(known.begin(), known.end(), target.ptxVersion) == known.end()) {
    std::string list;
    for (unsigned version : ptxVersionsFor(*chip))
      list += (list.empty() ? "" : ", ") + ptxVersionText(version);
    setError(error, "PTX " + ptxVersionText(target.ptxVersion) +
                        " is not a PTX version LLVM 22 knows; for " +
                        target.chip + ": " + list);
    return false;
  }
  return true;
}

bool validateTarget(std::string_view chipName, unsigned ptxVersion,
                    std::string *error) {
  const ChipInfo *chip = lookupChip(chipName);
  if (!chip) {
    setError(error, "unknown chip '" + std::string(chipName) +
                        "'; known: " + knownChipList());
    return false;
  }
  Target target{Target::Kind::Nvidia, std::string(chipName),
                ptxVersion ? ptxVersion : defaultPtxVersion(*chip)};
  return validateTarget(target, error);
}

} // namespace lowbit
