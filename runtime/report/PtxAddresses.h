//===- PtxAddresses.h - Where a PTX kernel's accesses point -----*- C++ -*-===//
//
// An address dataflow over one kernel body, statement by statement in text
// order (docs/gpu-report.md, "Addresses"): which .param slots each
// register's value is computed from, and how it varies over the 32 lanes
// of warp 0 (the thread index times known constants, plus a lane-uniform
// unknown). The report uses the first to give each streaming loop the
// buffers it reads, the second to count the 128-byte lines a warp-wide
// access touches. MLIR-free, internal to runtime/report.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_PTXADDRESSES_H
#define LOWBIT_RUNTIME_REPORT_PTXADDRESSES_H

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::report {

constexpr int kWarpLanes = 32;

/// A register's value per lane of warp 0: `base + lanes[l]`, where base is
/// a lane-uniform unknown when `based` (0 otherwise). Unknown when !known.
struct LaneValue {
  bool known = false, based = false;
  std::array<int64_t, kWarpLanes> lanes{};
  /// The unknown base is a multiple of this (1: nothing known): a buffer's
  /// address is 256-byte aligned, and scaling keeps a multiple.
  int64_t alignment = 1;
  /// Which lane-uniform unknown each lane's base is (based values only).
  /// A word loaded through lane-varying addresses (a page number read from
  /// a block table) is one unknown per distinct address, shared by the
  /// lanes that read the same word: lanes of one page keep their offsets,
  /// lanes of different pages never share a line. All 0: one base.
  std::array<uint8_t, kWarpLanes> bases{};
  bool uniform() const;
  static LaneValue constant(int64_t value);
  static LaneValue uniformUnknown();
};

/// Global memory from the allocator is aligned to at least 256 bytes
/// (CUDA C++ Programming Guide, "Device Memory Accesses").
constexpr int64_t kAllocationAlignment = 256;

/// Operands split at the commas outside braces and brackets, trimmed.
std::vector<std::string_view> operandList(std::string_view operands);
/// A PTX integer literal (decimal or 0x hex, optional '-' and 'U'); nullopt
/// for anything else.
std::optional<int64_t> integerOf(std::string_view text);

/// An opcode's dot-separated parts: "setp.lt.s32" -> setp, lt, s32.
std::vector<std::string_view> opcodeParts(std::string_view opcode);

/// An integer `setp` compare (lt le gt ge eq ne, and the unsigned lo ls
/// hi hs) of two values of `bits` bits; nullopt for another compare.
std::optional<bool> compareIntegers(std::string_view compare, int bits,
                                    int64_t a, int64_t b);

/// The `_param_N` slots `text` names, added to `slots`.
void collectParameters(std::string_view text, std::set<int> &slots);

/// What the dataflow knows about one memory operand `[reg+offset]`.
struct AddressInfo {
  std::vector<int> parameters;
  /// 128-byte lines a warp-wide access of `bytes` touches, 0 when the
  /// address is lane-uniform or unknown.
  int warpLines = 0;
  /// Adjacent lanes take adjacent elements (lane l + 1's address is lane
  /// l's plus the access's bytes, for most lanes: runs of lanes over one
  /// row each): the lanes share the range a loop walks.
  bool lanesContiguous = false;
  /// The statement of the latest global load the address is computed from
  /// (a page number read from a block table), -1 where none: that load
  /// must complete before this one issues.
  int feedingLoad = -1;
};

class AddressDataflow {
public:
  /// Scalar arguments a launch passes (.param slot -> value): an
  /// `ld.param` of such a slot is that constant, not a lane-uniform
  /// unknown (a runtime group size then leaves the lanes' addresses known).
  /// The launch's block size, where known (all > 0), makes %ntid a
  /// constant (a block-stride loop's step).
  /// `bufferSlots`: the .param slots that hold a buffer's address (the
  /// allocator's alignment, kAllocationAlignment, is then known).
  explicit AddressDataflow(std::map<int, int64_t> boundParameters = {},
                           std::array<int64_t, 3> blockSize = {0, 0, 0},
                           std::set<int> bufferSlots = {})
      : bound(std::move(boundParameters)), block(blockSize),
        buffers(std::move(bufferSlots)) {}
  /// Records the effect of one statement (opcode and its operand text,
  /// without the predicate and the ';').
  void step(std::string_view opcode, std::string_view operands);
  /// The memory operand of an ld/st/atom statement, as the state before
  /// that statement.
  AddressInfo address(std::string_view operands, int bytes) const;
  /// The alignment a module-level symbol declares (`.shared .align 16 .b8
  /// smem[]`): its address is a multiple of it.
  void setSymbolAlignments(std::map<std::string, int64_t, std::less<>> aligns) {
    symbolAlignments = std::move(aligns);
  }
  /// What the dataflow knows of an operand (a register, literal or
  /// special register) in the current state.
  LaneValue valueOf(std::string_view operand) const { return value(operand); }

private:
  LaneValue value(std::string_view operand) const;
  std::set<int> parameters(std::string_view operand) const;

  std::map<std::string, LaneValue, std::less<>> values;
  std::map<std::string, std::set<int>, std::less<>> sources;
  /// Per register, the statement of the latest global load its value is
  /// computed from (absent: none).
  std::map<std::string, int, std::less<>> loadedAt;
  /// Statements stepped so far: the index of the next one.
  int statement = 0;
  std::map<int, int64_t> bound;
  std::array<int64_t, 3> block;
  std::set<int> buffers;
  std::map<std::string, int64_t, std::less<>> symbolAlignments;
};

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_PTXADDRESSES_H
