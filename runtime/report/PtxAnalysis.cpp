//===- PtxAnalysis.cpp - What a PTX kernel body is made of ----------------===//
//
// A line-level reader of the PTX that LLVM's NVPTX backend and NVRTC write:
// one statement per line, labels on lines of their own, inline-asm scopes
// in braces. It counts instructions, global memory accesses by width,
// atomics, shuffles and divisions, finds loops as backward branches, and
// records which .param slots the body reads (a buffer address is used).
//
//===----------------------------------------------------------------------===//

#include "runtime/report/CodeLoops.h"
#include "runtime/report/GpuReport.h"
#include "runtime/report/PtxAddresses.h"
#include "runtime/report/PtxGuards.h"
#include "runtime/report/PtxTrips.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace lowbit::report {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() &&
         (text.front() == ' ' || text.front() == '\t' || text.front() == '\r'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t at = 0; at <= text.size(); ++at)
    if (at == text.size() || text[at] == separator) {
      parts.push_back(text.substr(start, at - start));
      start = at + 1;
    }
  return parts;
}

/// Bits of a PTX scalar type suffix (.u8, .f32, .b128, ...); 0 if none.
int typeBits(std::string_view type) {
  if (type.size() < 2)
    return 0;
  char kind = type.front();
  if (type == "bf16")
    return 16;
  if (kind != 'b' && kind != 'u' && kind != 's' && kind != 'f')
    return 0;
  int bits = 0;
  auto [end, ec] =
      std::from_chars(type.data() + 1, type.data() + type.size(), bits);
  if (ec != std::errc() || end != type.data() + type.size())
    return 0;
  return bits;
}

struct MemoryAccess {
  bool isLoad = false, isStore = false, generic = false;
  int bits = 0;
};

/// ld/st through global or generic addresses; params, shared, local and
/// constant memory are not HBM traffic of the kernel's buffers.
std::optional<MemoryAccess> memoryAccess(std::string_view opcode) {
  std::vector<std::string_view> parts = split(opcode, '.');
  std::string_view head = parts.front();
  if (head != "ld" && head != "ldu" && head != "st")
    return std::nullopt;
  MemoryAccess access;
  access.isLoad = head != "st";
  access.isStore = head == "st";
  bool global = false;
  int lanes = 1, bits = 0;
  for (std::string_view part : parts) {
    if (part == "param" || part == "shared" || part == "local" ||
        part == "const" || part.starts_with("shared::"))
      return std::nullopt;
    if (part == "global")
      global = true;
    else if (part == "v2" || part == "v4" || part == "v8")
      lanes = part[1] - '0';
    else if (int typeWidth = typeBits(part))
      bits = typeWidth;
  }
  if (bits == 0)
    return std::nullopt;
  access.generic = !global;
  access.bits = bits * lanes;
  return access;
}

/// The statement's opcode: the first word after an optional @predicate.
std::string_view opcodeOf(std::string_view statement) {
  size_t at = 0;
  if (!statement.empty() && statement.front() == '@') {
    at = statement.find_first_of(" \t");
    if (at == std::string_view::npos)
      return {};
    while (at < statement.size() &&
           (statement[at] == ' ' || statement[at] == '\t'))
      ++at;
  }
  size_t end = statement.find_first_of(" \t;", at);
  return statement.substr(at, end == std::string_view::npos ? end : end - at);
}

/// The body of one entry: the text between its outermost braces.
std::optional<std::string_view> entryBody(std::string_view ptx, size_t from,
                                          size_t &bodyEnd) {
  size_t open = ptx.find('{', ptx.find(')', from));
  if (open == std::string_view::npos)
    return std::nullopt;
  int depth = 0;
  for (size_t at = open; at < ptx.size(); ++at) {
    if (ptx[at] == '{')
      ++depth;
    else if (ptx[at] == '}' && --depth == 0) {
      bodyEnd = at;
      return ptx.substr(open + 1, at - open - 1);
    }
  }
  return std::nullopt;
}

/// The alignment each `.shared`, `.global` or `.const` symbol declares
/// (`.extern .shared .align 16 .b8 smem_raw[];`).
std::map<std::string, int64_t, std::less<>>
symbolAlignments(std::string_view ptx) {
  std::map<std::string, int64_t, std::less<>> aligns;
  for (std::string_view line : split(ptx, '\n')) {
    if (line.find(".align") == std::string_view::npos ||
        (line.find(".shared") == std::string_view::npos &&
         line.find(".global") == std::string_view::npos &&
         line.find(".const") == std::string_view::npos))
      continue;
    std::vector<std::string_view> words;
    for (std::string_view word : split(trim(line), ' '))
      for (std::string_view part : split(word, '\t'))
        if (!part.empty())
          words.push_back(part);
    for (size_t w = 0; w + 3 < words.size(); ++w) {
      if (words[w] != ".align" || !words[w + 2].starts_with('.'))
        continue;
      int64_t align = 0;
      std::from_chars(words[w + 1].data(),
                      words[w + 1].data() + words[w + 1].size(), align);
      std::string_view name = words[w + 3];
      name = name.substr(0, name.find_first_of("[;="));
      if (align > 0 && !name.empty())
        aligns[std::string(name)] = align;
    }
  }
  return aligns;
}

PtxKernel
analyzeBody(std::string name, std::string_view body,
            std::map<int, int64_t> boundParameters,
            std::array<int64_t, 3> block, const std::set<int> &bufferSlots,
            const std::map<std::string, int64_t, std::less<>> &symbolAligns) {
  PtxKernel kernel;
  kernel.name = std::move(name);
  std::map<std::string, int, std::less<>> labels;
  std::vector<std::pair<int, std::string>> branches; // index, target
  std::vector<std::optional<MemoryAccess>> accesses;
  std::set<int> parameters;
  AddressDataflow dataflow(boundParameters, block, bufferSlots);
  dataflow.setSymbolAlignments(symbolAligns);
  std::vector<PtxStatement> statements;
  std::vector<int> atomicStatements;
  for (std::string_view line : split(body, '\n')) {
    if (size_t comment = line.find("//"); comment != std::string_view::npos)
      line = line.substr(0, comment);
    line = trim(line);
    while (!line.empty() && (line.front() == '{' || line.front() == '}'))
      line = trim(line.substr(1));
    if (line.empty() || line.front() == '.')
      continue;
    if (line.back() == ':') {
      labels[std::string(line.substr(0, line.size() - 1))] =
          kernel.instructions;
      continue;
    }
    std::string_view opcode = opcodeOf(line);
    if (opcode.empty())
      continue;
    int index = kernel.instructions++;
    collectParameters(line, parameters);
    std::optional<MemoryAccess> access = memoryAccess(opcode);
    accesses.push_back(access);
    std::string_view operands = line.substr(line.find(opcode) + opcode.size());
    if (!operands.empty() && operands.back() == ';')
      operands.remove_suffix(1);
    std::string_view predicate;
    if (line.front() == '@')
      predicate = line.substr(1, line.find_first_of(" \t") - 1);
    statements.push_back({predicate, opcode, operands});
    if (access) {
      AddressInfo address = dataflow.address(operands, access->bits / 8);
      kernel.accesses.push_back({index, access->bits, access->isLoad,
                                 address.parameters, address.warpLines,
                                 address.lanesContiguous, address.feedingLoad});
      (access->isLoad ? kernel.loadWidths : kernel.storeWidths)[access->bits]++;
      (access->isLoad ? kernel.globalLoadBytes : kernel.globalStoreBytes) +=
          access->bits / 8;
      kernel.genericAccesses += access->generic;
    }
    dataflow.step(opcode, operands);
    bool sysScope = opcode.find(".sys") != std::string_view::npos;
    if (opcode.starts_with("atom.") || opcode.starts_with("red.")) {
      ++kernel.atomics;
      atomicStatements.push_back(index);
      kernel.casAtomics += opcode.find(".cas") != std::string_view::npos;
      // Without a scope qualifier an atomic is .gpu scope (PTX ISA 9.7.13).
    }
    if (sysScope &&
        (opcode.starts_with("atom.") || opcode.starts_with("red.") ||
         opcode.starts_with("fence") || opcode.starts_with("membar")))
      ++kernel.sysScopeOps;
    if (opcode.starts_with("shfl.") || opcode.starts_with("redux."))
      ++kernel.shuffles;
    if (opcode.starts_with("mma.sync")) {
      kernel.mmaInstructions.push_back(index);
      kernel.mmaOpcodes.emplace_back(opcode);
    }
    if (opcode.starts_with("bar.") || opcode.starts_with("barrier."))
      ++kernel.barriers;
    if (opcode.starts_with("div.") &&
        (opcode.ends_with(".f32") || opcode.ends_with(".f64")))
      ++kernel.divisions;
    if (opcode == "bra" || opcode == "bra.uni") {
      std::string_view operands =
          line.substr(line.find(opcode) + opcode.size());
      operands = trim(operands);
      if (!operands.empty() && operands.back() == ';')
        operands.remove_suffix(1);
      branches.emplace_back(index, std::string(trim(operands)));
    }
  }
  std::vector<std::pair<int, int>> globalBytes;
  for (const std::optional<MemoryAccess> &access : accesses)
    globalBytes.emplace_back(access && access->isLoad ? access->bits / 8 : 0,
                             access && access->isStore ? access->bits / 8 : 0);
  kernel.loops = findLoops(branches, labels, globalBytes);
  // The trips each loop's bound states: the dataflow again, its state
  // taken at every loop's header (the counters' initial values).
  // Outside loops the dataflow's values are what every lane computes, so
  // a compare there decides which lanes of warp 0 take a branch.
  std::map<int, AddressDataflow> atHeader;
  std::vector<std::optional<uint32_t>> predicateLanes(statements.size());
  AddressDataflow replay(boundParameters, block, bufferSlots);
  replay.setSymbolAlignments(symbolAligns);
  for (size_t i = 0; i < statements.size(); ++i) {
    bool inLoop = false;
    for (const CodeLoop &loop : kernel.loops) {
      if (loop.firstInstruction == int(i))
        atHeader.emplace(int(i), replay);
      inLoop |=
          loop.firstInstruction <= int(i) && int(i) <= loop.lastInstruction;
    }
    if (!inLoop && statements[i].opcode.starts_with("setp."))
      predicateLanes[i] = compareLanes(statements[i], replay);
    replay.step(statements[i].opcode, statements[i].operands);
  }
  std::vector<uint32_t> lanes =
      lanesReaching(statements, labels, predicateLanes);
  for (uint32_t reaching : lanes)
    kernel.reached.push_back(reaching != 0);
  for (const CodeLoop &loop : kernel.loops) {
    auto state = atHeader.find(loop.firstInstruction);
    int test = -1;
    std::optional<double> trips =
        state == atHeader.end()
            ? std::nullopt
            : statedTrips(statements, labels, loop, state->second, &test);
    kernel.loopStatedTrips.push_back(trips.value_or(0));
    kernel.loopTests.push_back(trips ? test : -1);
  }
  // Atomics as executed: the threads of a block that reach each one.
  std::vector<ThreadSet> running = threadsRunning(statements, labels);
  for (int index : atomicStatements)
    kernel.atomicThreads.push_back(running[size_t(index)]);
  kernel.parametersRead.assign(parameters.begin(), parameters.end());
  return kernel;
}

} // namespace

Expected<std::vector<PtxKernel>> analyzePtx(std::string_view ptx) {
  return analyzePtx(ptx, {});
}

Expected<std::vector<PtxKernel>>
analyzePtx(std::string_view ptx,
           const std::map<std::string, std::map<int, int64_t>> &bound,
           const std::map<std::string, std::array<int64_t, 3>> &blocks,
           const std::map<std::string, std::set<int>> &bufferSlots) {
  std::vector<PtxKernel> kernels;
  std::map<std::string, int64_t, std::less<>> aligns = symbolAlignments(ptx);
  size_t at = 0;
  while ((at = ptx.find(".entry ", at)) != std::string_view::npos) {
    size_t nameStart = at + 7;
    size_t nameEnd = ptx.find_first_of("( \t\n", nameStart);
    if (nameEnd == std::string_view::npos)
      break;
    std::string name(ptx.substr(nameStart, nameEnd - nameStart));
    size_t bodyEnd = 0;
    std::optional<std::string_view> body = entryBody(ptx, nameEnd, bodyEnd);
    if (!body)
      return makeError(ErrorCode::InvalidArgument,
                       "PTX entry '" + name + "' has no complete body");
    auto values = bound.find(name);
    auto block = blocks.find(name);
    auto buffers = bufferSlots.find(name);
    kernels.push_back(analyzeBody(
        std::move(name), *body,
        values == bound.end() ? std::map<int, int64_t>() : values->second,
        block == blocks.end() ? std::array<int64_t, 3>{0, 0, 0} : block->second,
        buffers == bufferSlots.end() ? std::set<int>() : buffers->second,
        aligns));
    at = bodyEnd;
  }
  if (kernels.empty())
    return makeError(ErrorCode::InvalidArgument,
                     "the PTX holds no .entry (not a kernel module)");
  return kernels;
}

} // namespace lowbit::report
