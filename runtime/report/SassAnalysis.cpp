//===- SassAnalysis.cpp - What ptxas made of a kernel ---------------------===//
//
// A line reader of `nvdisasm -c`: a function starts at `.text.NAME:`,
// labels are `.L_x_N:` lines, instructions are `/*ADDR*/ [@P] OP ... ;`.
// An opcode's class comes from its head (the part before the first '.');
// the width of a load or store from its size modifier (.U8/.S8, .U16/.S16,
// .64, .128, .256; 32 bits without one). NOPs are alignment padding and
// not counted; the `BRA` to itself that ends every function is a trap,
// not a loop.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/SassAnalysis.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace lowbit::report {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() &&
         std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> dotParts(std::string_view opcode) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t at = 0; at <= opcode.size(); ++at)
    if (at == opcode.size() || opcode[at] == '.') {
      parts.push_back(opcode.substr(start, at - start));
      start = at + 1;
    }
  return parts;
}

const std::set<std::string_view> &namesOf(std::string_view kind) {
  static const std::map<std::string_view, std::set<std::string_view>> kinds = {
      {"fp32",
       {"FADD", "FMUL", "FFMA", "FMNMX", "FSETP", "FSEL", "FCHK", "FSWZADD",
        "FADD32I", "FMUL32I", "FFMA32I", "FSET", "FRND", "FMNMX3", "FADD2",
        "FMUL2", "FFMA2"}},
      {"fp16",
       {"HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSETP2", "HSET2", "HADD2_32I",
        "HMUL2_32I", "HFMA2_32I"}},
      {"mufu", {"MUFU"}},
      {"int",
       {"IADD3", "IADD",    "IMAD",      "IMUL",    "IMNMX",   "LOP3",
        "LOP",   "SHF",     "SHL",       "SHR",     "ISETP",   "LEA",
        "IABS",  "POPC",    "FLO",       "BMSK",    "SGXT",    "PRMT",
        "SEL",   "VIADD",   "VIADDMNMX", "VIMNMX",  "VIMNMX3", "IDP",
        "BREV",  "IADD32I", "LOP32I",    "ISCADD",  "P2R",     "R2P",
        "PLOP3", "PSETP",   "IMAD32I",   "IMUL32I", "IDP4A",   "IMNMX3"}},
      {"conversion",
       {"F2F", "F2I", "I2F", "F2FP", "I2FP", "F2IP", "I2I", "I2IP"}},
      {"move", {"MOV", "MOV32I", "S2R", "CS2R", "S2UR", "R2UR", "MOVM"}},
      {"global", {"LDG", "STG", "LD", "ST", "LDGSTS", "LDGDEPBAR"}},
      {"shared", {"LDS", "STS", "LDSM", "STSM", "ATOMS"}},
      {"local", {"LDL", "STL"}},
      {"constant", {"LDC"}},
      {"atomic", {"ATOMG", "ATOM", "REDG", "RED"}},
      {"warp", {"SHFL", "REDUX", "VOTE", "VOTEU", "MATCH", "ELECT"}},
      {"tensor",
       {"HMMA", "IMMA", "QMMA", "OMMA", "DMMA", "BMMA", "HGMMA", "IGMMA",
        "QGMMA", "BGMMA", "UTCMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA",
        "UTCOMMA"}},
      {"control",
       {"BRA",   "BRX",   "JMP",       "JMX",       "EXIT",    "BSSY",
        "BSYNC", "BAR",   "WARPSYNC",  "CALL",      "RET",     "YIELD",
        "BPT",   "KILL",  "NANOSLEEP", "DEPBAR",    "MEMBAR",  "ERRBAR",
        "CCTL",  "FENCE", "BMOV",      "WARPGROUP", "ACQBULK", "SYNCS"}},
  };
  static const std::set<std::string_view> none;
  auto found = kinds.find(kind);
  return found == kinds.end() ? none : found->second;
}

constexpr std::array<std::string_view, 16> kClasses = {
    "fp32", "fp16",   "mufu",    "int",   "uniform",  "conversion",
    "move", "global", "shared",  "local", "constant", "atomic",
    "warp", "tensor", "control", "other"};

std::string_view classOf(std::string_view head) {
  for (std::string_view kind : kClasses)
    if (namesOf(kind).count(head))
      return kind;
  // The uniform datapath (UIADD3, ULDC, UMOV, ...): its own pipe.
  if (head.size() > 1 && head.front() == 'U')
    return "uniform";
  return "other";
}

/// Bits one lane moves: the size modifier, 32 without one.
int accessBits(const std::vector<std::string_view> &parts) {
  int bits = 32;
  for (std::string_view part : parts) {
    if (part == "U8" || part == "S8")
      bits = 8;
    else if (part == "U16" || part == "S16")
      bits = 16;
    else if (part == "64" || part == "128" || part == "256")
      std::from_chars(part.data(), part.data() + part.size(), bits);
  }
  return bits;
}

/// The highest R<n> an instruction names (RZ, UR<n>, SR_* are not R<n>).
int highestRegisterIn(std::string_view text) {
  int highest = -1;
  for (size_t at = 0; at + 1 < text.size(); ++at) {
    if (text[at] != 'R' ||
        !std::isdigit(static_cast<unsigned char>(text[at + 1])))
      continue;
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) ||
                   text[at - 1] == '_'))
      continue;
    int number = 0;
    std::from_chars(text.data() + at + 1, text.data() + text.size(), number);
    highest = std::max(highest, number);
  }
  return highest;
}

struct Pending {
  SassKernel kernel;
  std::map<std::string, int, std::less<>> labels;
  std::vector<std::pair<int, std::string>> branches;
  /// BRA.DIV targets, and the unpredicated BRAs (their ends).
  std::vector<std::string> divergentTargets;
  std::vector<int> unconditionalBranches;
  /// The instructions of slow-path subroutines and the CALLs to them.
  std::vector<int> slowPathCode, slowPathCalls;
  /// The `$__internal_...` subroutine being read; empty in the kernel body.
  std::string subroutine;
  std::vector<std::pair<int, int>> globalBytes; // load, store per instruction
};

/// SassKernel::coldPath: diverged warps' fallbacks, slow-path subroutines
/// and the blocks that call them.
std::vector<bool> coldPathOf(const Pending &pending) {
  std::vector<bool> cold(size_t(pending.kernel.instructions), false);
  for (const std::string &target : pending.divergentTargets) {
    auto label = pending.labels.find(target);
    if (label == pending.labels.end())
      continue;
    auto end =
        std::lower_bound(pending.unconditionalBranches.begin(),
                         pending.unconditionalBranches.end(), label->second);
    if (end == pending.unconditionalBranches.end())
      continue;
    for (int i = label->second; i <= *end; ++i)
      cold[size_t(i)] = true;
  }
  for (int i : pending.slowPathCode)
    cold[size_t(i)] = true;
  // A call's block: after the last branch or label before it, up to the
  // next label.
  std::set<int> starts, branchesAt;
  for (const auto &[name, index] : pending.labels)
    starts.insert(index);
  for (const auto &branch : pending.branches)
    branchesAt.insert(branch.first);
  for (int call : pending.slowPathCalls) {
    int first = call;
    while (first > 0 && !starts.count(first) && !branchesAt.count(first - 1))
      --first;
    auto next = starts.upper_bound(call);
    int last =
        next == starts.end() ? pending.kernel.instructions - 1 : *next - 1;
    for (int i = first; i <= last; ++i)
      cold[size_t(i)] = true;
  }
  return cold;
}

void finish(Pending &pending, std::vector<SassKernel> &kernels) {
  SassKernel &kernel = pending.kernel;
  kernel.coldPath = coldPathOf(pending);
  std::vector<std::pair<int, std::string>> run;
  for (const auto &branch : pending.branches)
    if (!kernel.coldPath[size_t(branch.first)])
      run.push_back(branch);
  kernel.loops = findLoops(run, pending.labels, pending.globalBytes);
  kernel.globalBytes = std::move(pending.globalBytes);
  // The critical loop streams the most global bytes per trip; among equals
  // (none streams), the largest.
  for (size_t l = 0; l < kernel.loops.size(); ++l) {
    auto key = [](const SassLoop &loop) {
      return std::make_pair(loop.globalLoadBytes + loop.globalStoreBytes,
                            loop.instructions());
    };
    if (kernel.criticalLoop < 0 ||
        key(kernel.loops[l]) > key(kernel.loops[size_t(kernel.criticalLoop)]))
      kernel.criticalLoop = int(l);
  }
  kernels.push_back(std::move(kernel));
}

} // namespace

int SassKernel::atomicCount() const {
  int count = 0;
  for (const auto &[opcode, n] : atomics)
    count += n;
  return count;
}

std::vector<SassKernel> analyzeSass(std::string_view text) {
  std::vector<SassKernel> kernels;
  std::optional<Pending> pending;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    if (line.starts_with(".text.") && line.ends_with(':')) {
      if (pending)
        finish(*pending, kernels);
      pending.emplace();
      pending->kernel.name = std::string(line.substr(6, line.size() - 7));
      continue;
    }
    if (!pending)
      continue;
    // A ptxas runtime subroutine after the kernel body.
    if (line.starts_with("$__internal") && line.ends_with(':')) {
      pending->subroutine = std::string(line.substr(0, line.size() - 1));
      continue;
    }
    if (line.starts_with(".L") && line.ends_with(':')) {
      pending->labels[std::string(line.substr(0, line.size() - 1))] =
          pending->kernel.instructions;
      continue;
    }
    if (!line.starts_with("/*"))
      continue;
    size_t close = line.find("*/");
    if (close == std::string_view::npos)
      continue;
    std::string_view instruction = trim(line.substr(close + 2));
    if (size_t semicolon = instruction.find(';');
        semicolon != std::string_view::npos)
      instruction = trim(instruction.substr(0, semicolon));
    bool predicated = instruction.starts_with('@');
    if (predicated)
      instruction = trim(instruction.substr(instruction.find(' ')));
    size_t space = instruction.find(' ');
    std::string_view opcode = instruction.substr(0, space);
    std::string_view operands =
        space == std::string_view::npos ? "" : instruction.substr(space);
    std::vector<std::string_view> parts = dotParts(opcode);
    std::string_view head = parts.front();
    if (head.empty() || head == "NOP")
      continue;
    SassKernel &kernel = pending->kernel;
    int index = kernel.instructions++;
    std::string_view kind = classOf(head);
    kernel.mix[std::string(kind)]++;
    kernel.classes.push_back(kind);
    kernel.conversionPipe.push_back(head == "F2F" || head == "F2I" ||
                                    head == "I2F" || head == "I2I");
    kernel.fmaPipeInteger.push_back(head == "IMAD" || head == "IMUL" ||
                                    head == "IDP" || head == "IDP4A" ||
                                    head == "IMAD32I" || head == "IMUL32I");
    kernel.aluMove.push_back(head == "MOV" || head == "MOV32I");
    kernel.highestRegister =
        std::max(kernel.highestRegister, highestRegisterIn(operands));
    int loadBytes = 0, storeBytes = 0;
    int bits = accessBits(parts);
    if (kind == "global" && head != "LDGDEPBAR") {
      bool load = head.starts_with("LD");
      (load ? kernel.loadWidths : kernel.storeWidths)[bits]++;
      (load ? loadBytes : storeBytes) = bits / 8;
    } else if (kind == "shared" && head != "ATOMS") {
      (head.starts_with("LD") ? kernel.sharedLoadBytes
                              : kernel.sharedStoreBytes) += bits / 8;
    } else if (kind == "local") {
      (head == "LDL" ? kernel.localLoads : kernel.localStores)++;
    } else if (kind == "atomic") {
      std::string key(head);
      for (std::string_view part : parts)
        if (part == "ADD" || part == "MAX" || part == "MIN" || part == "EXCH" ||
            part == "CAS" || part == "AND" || part == "OR" || part == "XOR" ||
            part == "INC" || part == "DEC")
          key += "." + std::string(part);
      kernel.atomics[key]++;
    }
    pending->globalBytes.emplace_back(loadBytes, storeBytes);
    if (pending->subroutine.find("slowpath") != std::string::npos)
      pending->slowPathCode.push_back(index);
    if (head == "CALL" && operands.find("slowpath") != std::string_view::npos)
      pending->slowPathCalls.push_back(index);
    if (head == "BRA") {
      size_t open = operands.find("`(");
      size_t shut = operands.find(')', open);
      if (open == std::string_view::npos || shut == std::string_view::npos)
        continue;
      std::string target(operands.substr(open + 2, shut - open - 2));
      if (std::find(parts.begin(), parts.end(), "DIV") != parts.end())
        pending->divergentTargets.push_back(target);
      else if (!predicated)
        pending->unconditionalBranches.push_back(index);
      pending->branches.emplace_back(index, std::move(target));
    }
  }
  if (pending)
    finish(*pending, kernels);
  return kernels;
}

std::string sassMixText(const SassKernel &kernel) {
  std::string text;
  for (std::string_view kind : kClasses)
    if (auto found = kernel.mix.find(std::string(kind));
        found != kernel.mix.end() && found->second > 0)
      text +=
          fmt::format("{}{} {}", text.empty() ? "" : ", ", kind, found->second);
  return text.empty() ? "-" : text;
}

} // namespace lowbit::report
