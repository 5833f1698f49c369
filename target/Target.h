//===- Target.h - Code generation targets: chips and PTX versions -*- C++
//-*-===//
//
// The one table of chips lowbit generates code for, with the PTX versions
// LLVM 22's NVPTX backend accepts for each. LLVM aborts the process (LLVM
// ERROR) on a PTX version too old for the chip, so every request is checked
// here before any codegen (validateTarget). Plain C++: the MLIR-free
// runtime can use it to build cache keys.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TARGET_TARGET_H
#define LOWBIT_TARGET_TARGET_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit {

/// Which feature set a chip name selects: plain sm_100 is the portable
/// subset; sm_100a the arch-specific one (only that chip); sm_100f the
/// family-specific one. The FP4/FP6/E8M0 cvt instructions exist only in the
/// arch- and family-specific sets.
enum class FeatureSet { Portable, ArchSpecific, FamilySpecific };

struct ChipInfo {
  std::string_view name; ///< "sm_90a"
  unsigned smVersion;    ///< 90
  FeatureSet featureSet;
  /// The oldest PTX ISA version (times ten) LLVM 22 accepts for the chip.
  unsigned minPtxVersion;
};

/// The chips lowbit knows, in ascending order of sm version.
const std::vector<ChipInfo> &knownChips();
const ChipInfo *lookupChip(std::string_view name);

/// The newest PTX ISA version LLVM 22 can emit (and CUDA 13.0's ptxas reads).
constexpr unsigned kMaxPtxVersion = 90;

/// Every PTX ISA version (times ten) LLVM 22's NVPTX backend knows, in
/// ascending order: 7.0-7.8, 8.0-8.8, 9.0. Others (7.9, 8.9) are not
/// features it has: it would ignore "+ptx89" with a warning and emit an
/// older version, below what the table promised (and abort on a cvt).
const std::vector<unsigned> &knownPtxVersions();

/// The versions of knownPtxVersions() that `chip` accepts.
std::vector<unsigned> ptxVersionsFor(const ChipInfo &chip);

/// A code generation target: the host CPU, or an NVIDIA chip with a PTX
/// version (times ten: 81 = PTX 8.1).
struct Target {
  enum class Kind { Cpu, Nvidia };
  Kind kind = Kind::Cpu;
  std::string chip; ///< "sm_90a"; empty for the CPU
  unsigned ptxVersion = 0;

  bool isCpu() const { return kind == Kind::Cpu; }
  bool isNvidia() const { return kind == Kind::Nvidia; }
  /// "cpu" or "sm_90a+ptx80".
  std::string str() const;
};

/// The PTX version used when none is asked for: the chip's minimum, raised
/// to 8.1 on sm_89 and newer so that the native FP8 cvt is available there
/// (LLVM needs PTX 8.1 for it on sm_89).
unsigned defaultPtxVersion(const ChipInfo &chip);

/// Parses "cpu", "sm_90a", "sm_89+ptx81" or "sm_89:ptx81". A missing PTX
/// version takes defaultPtxVersion. Unknown chips and malformed text give
/// nullopt and a message. The result is not yet validated.
std::optional<Target> parseTarget(std::string_view text, std::string *error);

/// Checks a target before any code generation: the chip is known and the
/// PTX version is one LLVM 22 knows and accepts for it (e.g. "sm_90a needs
/// PTX >= 8.0; asked for 6.0"). Returns false with a message in `error`.
bool validateTarget(const Target &target, std::string *error);
/// The same check for a chip name and PTX version (times ten); 0 means the
/// chip's default.
bool validateTarget(std::string_view chip, unsigned ptxVersion,
                    std::string *error);

/// "8.1" for 81.
std::string ptxVersionText(unsigned ptxVersion);

} // namespace lowbit

#endif // LOWBIT_TARGET_TARGET_H
