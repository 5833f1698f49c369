//===- PtxTrips.cpp - Loop trip counts from a PTX loop's bound ------------===//
//
// Two loop shapes, as LLVM writes them: a rotated loop ends in
// `@%p bra HEADER` (it goes on while the predicate holds), a loop with
// its test on top ends in an unconditional `bra HEADER` and leaves by
// `@%p bra EXIT` (it goes on while the predicate fails). The predicate's
// `setp` compares two operands, each an invariant (no definition in the
// body: its value at the header), a counter (one definition in the body,
// `add r, r, S` or `sub r, r, S` with S an invariant constant) or a
// counter plus an invariant constant (`add t, r, S` before the `setp`).
//
//===----------------------------------------------------------------------===//

#include "runtime/report/PtxTrips.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace lowbit::report {

namespace {

/// The value an operand has at one statement of trip t (1-based):
/// `first + (t - 1) * step`, per lane.
struct Affine {
  LaneValue first;
  int64_t step = 0;
};

std::string_view headOf(std::string_view opcode) {
  return opcode.substr(0, opcode.find('.'));
}

/// The statement writes its first operand (not a store, branch or barrier).
bool defines(const PtxStatement &statement, std::string_view name) {
  std::string_view head = headOf(statement.opcode);
  if (head == "st" || head == "red" || head == "bra" || head == "bar" ||
      head == "barrier" || head == "ret" || head == "exit" ||
      head == "membar" || head == "fence" || head == "call" || head == "mma" ||
      head == "cp" || head == "wgmma")
    return false;
  std::vector<std::string_view> operands = operandList(statement.operands);
  return !operands.empty() && operands.front() == name;
}

class LoopBody {
public:
  LoopBody(const std::vector<PtxStatement> &statements, const CodeLoop &loop,
           const AddressDataflow &atHeader)
      : statements(statements), loop(loop), atHeader(atHeader) {}

  /// The operand's value at statement `at` of the body.
  std::optional<Affine> operandAt(std::string_view operand, int at) const {
    std::vector<int> definitions = definitionsOf(operand);
    if (definitions.empty()) {
      LaneValue value = atHeader.valueOf(operand);
      if (!value.known)
        return std::nullopt;
      return Affine{value, 0};
    }
    if (definitions.size() != 1)
      return std::nullopt;
    if (std::optional<Affine> counter = counterAt(operand, at))
      return counter;
    // t = r + S, written before the use (or, in a loop whose test is a
    // latch on top, anywhere in the body: every trip runs it first).
    int index = definitions.front();
    if (index >= at && !testAfterBody)
      return std::nullopt;
    const PtxStatement &statement = statements[size_t(index)];
    std::string_view head = headOf(statement.opcode);
    std::vector<std::string_view> operands = operandList(statement.operands);
    if ((head != "add" && head != "sub") || operands.size() != 3)
      return std::nullopt;
    for (size_t side : {size_t(1), size_t(2)}) {
      if (head == "sub" && side == 2)
        break;
      std::optional<int64_t> offset = invariantConstant(operands[3 - side]);
      // t = r + S and r = t (a `mov` back): a counter carried through a
      // copy, r's header value plus S on the first trip.
      if (offset && *offset != 0 && copiesBack(operands[side], operand)) {
        LaneValue initial = atHeader.valueOf(operands[side]);
        if (!initial.known)
          return std::nullopt;
        int64_t step = head == "sub" ? -*offset : *offset;
        for (int64_t &lane : initial.lanes)
          lane += step;
        return Affine{initial, step};
      }
      std::optional<Affine> counter = counterAt(operands[side], index);
      if (counter && offset) {
        int64_t signedOffset = head == "sub" ? -*offset : *offset;
        for (int64_t &lane : counter->first.lanes)
          lane += signedOffset;
        return counter;
      }
    }
    return std::nullopt;
  }

  /// The loop's test is a latch on top: the body runs before each test.
  bool testAfterBody = false;

private:
  /// `copy`'s one definition in the body is `mov copy, from`.
  bool copiesBack(std::string_view copy, std::string_view from) const {
    std::vector<int> definitions = definitionsOf(copy);
    if (definitions.size() != 1)
      return false;
    const PtxStatement &statement = statements[size_t(definitions.front())];
    std::vector<std::string_view> operands = operandList(statement.operands);
    return headOf(statement.opcode) == "mov" && operands.size() == 2 &&
           operands[1] == from;
  }

  std::vector<int> definitionsOf(std::string_view name) const {
    std::vector<int> found;
    if (!name.starts_with('%'))
      return found;
    for (int i = loop.firstInstruction; i <= loop.lastInstruction; ++i)
      if (defines(statements[size_t(i)], name))
        found.push_back(i);
    return found;
  }

  /// A literal, or an invariant register whose value is one known integer.
  std::optional<int64_t> invariantConstant(std::string_view operand) const {
    if (!definitionsOf(operand).empty())
      return std::nullopt;
    LaneValue value = atHeader.valueOf(operand);
    if (!value.known || value.based || !value.uniform())
      return std::nullopt;
    return value.lanes[0];
  }

  /// A counter `r = r +- S` at statement `at`: its header value plus S
  /// per trip, and S more once its step is behind `at`.
  std::optional<Affine> counterAt(std::string_view name, int at) const {
    std::vector<int> definitions = definitionsOf(name);
    if (definitions.size() != 1)
      return std::nullopt;
    int index = definitions.front();
    const PtxStatement &statement = statements[size_t(index)];
    std::string_view head = headOf(statement.opcode);
    std::vector<std::string_view> operands = operandList(statement.operands);
    if ((head != "add" && head != "sub") || operands.size() != 3)
      return std::nullopt;
    std::optional<int64_t> step;
    if (operands[1] == name)
      step = invariantConstant(operands[2]);
    else if (head == "add" && operands[2] == name)
      step = invariantConstant(operands[1]);
    if (!step || *step == 0)
      return std::nullopt;
    if (head == "sub")
      step = -*step;
    LaneValue initial = atHeader.valueOf(name);
    if (!initial.known)
      return std::nullopt;
    if (index < at)
      for (int64_t &lane : initial.lanes)
        lane += *step;
    return Affine{initial, *step};
  }

  const std::vector<PtxStatement> &statements;
  const CodeLoop &loop;
  const AddressDataflow &atHeader;
};

std::string_view negated(std::string_view compare) {
  for (auto [a, b] : {std::pair<std::string_view, std::string_view>{"lt", "ge"},
                      {"le", "gt"},
                      {"eq", "ne"},
                      {"lo", "hs"},
                      {"ls", "hi"}}) {
    if (compare == a)
      return b;
    if (compare == b)
      return a;
  }
  return {};
}

/// The index of the statement defining predicate `name` last before `at`,
/// within the loop; -1 if none.
int predicateDefinition(const std::vector<PtxStatement> &statements,
                        const CodeLoop &loop, std::string_view name, int at) {
  for (int i = at - 1; i >= loop.firstInstruction; --i)
    if (headOf(statements[size_t(i)].opcode) == "setp" &&
        defines(statements[size_t(i)], name))
      return i;
  return -1;
}

} // namespace

std::optional<int64_t> tripsWhile(std::string_view compare, int64_t first,
                                  int64_t step) {
  // The smallest trip t >= 1 at which d(t) = first + (t - 1) step fails.
  constexpr int64_t kLargest = int64_t(1) << 40;
  auto bounded = [&](int64_t trips) -> std::optional<int64_t> {
    if (trips < 1 || trips > kLargest)
      return std::nullopt;
    return trips;
  };
  if (compare == "lo")
    compare = "lt";
  else if (compare == "ls")
    compare = "le";
  else if (compare == "hi")
    compare = "gt";
  else if (compare == "hs")
    compare = "ge";
  if (compare == "gt")
    return tripsWhile("lt", -first, -step);
  if (compare == "ge")
    return tripsWhile("le", -first, -step);
  if (compare == "lt") {
    if (first >= 0)
      return 1;
    if (step <= 0)
      return std::nullopt;
    return bounded(1 + (-first + step - 1) / step);
  }
  if (compare == "le") {
    if (first > 0)
      return 1;
    if (step <= 0)
      return std::nullopt;
    return bounded(2 + (-first) / step);
  }
  if (compare == "ne") {
    if (first == 0)
      return 1;
    if (step == 0 || (-first) % step != 0 || (-first) / step < 0)
      return std::nullopt;
    return bounded(1 + (-first) / step);
  }
  if (compare == "eq") {
    if (first != 0)
      return 1;
    return step != 0 ? std::optional<int64_t>(2) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<double>
statedTrips(const std::vector<PtxStatement> &statements,
            const std::map<std::string, int, std::less<>> &labels,
            const CodeLoop &loop, const AddressDataflow &atHeader,
            int *testAt) {
  if (loop.lastInstruction >= int(statements.size()) ||
      loop.firstInstruction < 0)
    return std::nullopt;
  // The test: the back edge's predicate, or the body's branch out.
  int test = loop.lastInstruction;
  bool continueWhenTrue = true, testOnTop = false, latchOnTop = false;
  if (statements[size_t(test)].predicate.empty()) {
    test = -1;
    for (int i = loop.firstInstruction; i < loop.lastInstruction; ++i) {
      const PtxStatement &statement = statements[size_t(i)];
      if (headOf(statement.opcode) != "bra" || statement.predicate.empty())
        continue;
      std::string_view target = statement.operands;
      while (!target.empty() &&
             (target.front() == ' ' || target.front() == '\t'))
        target.remove_prefix(1);
      while (!target.empty() && (target.back() == ' ' || target.back() == '\t'))
        target.remove_suffix(1);
      // A way out goes past the loop's end (a branch to before its start
      // is another back edge of the same code: LLVM's shared latch).
      auto label = labels.find(target);
      bool leaves =
          label != labels.end() && label->second > loop.lastInstruction;
      if (leaves) {
        if (test >= 0)
          return std::nullopt; // several ways out
        test = i;
      }
    }
    continueWhenTrue = false;
    testOnTop = true;
    // A latch on top (`@%p bra BODY; bra EXIT;`, the loop entered by a
    // jump past it): it goes on while the predicate holds, tested after
    // each trip.
    if (test < 0)
      for (int i = loop.firstInstruction; i + 1 < loop.lastInstruction; ++i) {
        const PtxStatement &branch = statements[size_t(i)],
                           &exit = statements[size_t(i) + 1];
        if (headOf(branch.opcode) != "bra" || branch.predicate.empty() ||
            headOf(exit.opcode) != "bra" || !exit.predicate.empty())
          continue;
        std::vector<std::string_view> target = operandList(exit.operands);
        auto out = target.empty() ? labels.end() : labels.find(target.front());
        if (out != labels.end() && out->second > loop.lastInstruction) {
          test = i;
          continueWhenTrue = true;
          testOnTop = false;
          latchOnTop = true;
          break;
        }
      }
    if (test < 0)
      return std::nullopt;
  }
  std::string_view predicate = statements[size_t(test)].predicate;
  if (predicate.starts_with('!')) {
    predicate.remove_prefix(1);
    continueWhenTrue = !continueWhenTrue;
  }
  int compareAt = predicateDefinition(statements, loop, predicate, test);
  if (compareAt < 0)
    return std::nullopt;
  const PtxStatement &setp = statements[size_t(compareAt)];
  std::vector<std::string_view> parts = opcodeParts(setp.opcode);
  // setp.CMP.TYPE on integers only (a combining setp.CMP.and has a third
  // source predicate).
  if (parts.size() != 3 || parts[2].empty() || parts[2].front() == 'f')
    return std::nullopt;
  std::string_view compare = continueWhenTrue ? parts[1] : negated(parts[1]);
  std::vector<std::string_view> operands = operandList(setp.operands);
  if (operands.size() != 3)
    return std::nullopt;
  LoopBody body(statements, loop, atHeader);
  body.testAfterBody = latchOnTop;
  std::optional<Affine> left = body.operandAt(operands[1], compareAt),
                        right = body.operandAt(operands[2], compareAt);
  if (!left || !right || left->first.based || right->first.based)
    return std::nullopt;
  int64_t most = 0;
  for (int l = 0; l < kWarpLanes; ++l) {
    std::optional<int64_t> trips = tripsWhile(
        compare, left->first.lanes[size_t(l)] - right->first.lanes[size_t(l)],
        left->step - right->step);
    if (!trips)
      return std::nullopt;
    most = std::max(most, *trips);
  }
  // A test on top runs once more than the body.
  if (testOnTop)
    most = std::max<int64_t>(1, most - 1);
  if (testAt)
    *testAt = compareAt;
  return double(most);
}

std::optional<uint32_t> compareLanes(const PtxStatement &setp,
                                     const AddressDataflow &state) {
  std::vector<std::string_view> parts = opcodeParts(setp.opcode);
  if (parts.size() != 3 || parts[0] != "setp" || parts[2].size() < 2 ||
      parts[2].front() == 'f')
    return std::nullopt;
  std::vector<std::string_view> operands = operandList(setp.operands);
  if (operands.size() != 3 || operands[0].find('|') != std::string_view::npos)
    return std::nullopt;
  LaneValue left = state.valueOf(operands[1]),
            right = state.valueOf(operands[2]);
  if (!left.known || !right.known || left.based || right.based)
    return std::nullopt;
  int bits = 0;
  std::from_chars(parts[2].data() + 1, parts[2].data() + parts[2].size(), bits);
  uint32_t lanes = 0;
  for (int l = 0; l < kWarpLanes; ++l) {
    std::optional<bool> holds = compareIntegers(
        parts[1], bits, left.lanes[size_t(l)], right.lanes[size_t(l)]);
    if (!holds)
      return std::nullopt;
    lanes |= uint32_t(*holds) << l;
  }
  return lanes;
}

std::vector<uint32_t>
lanesReaching(const std::vector<PtxStatement> &statements,
              const std::map<std::string, int, std::less<>> &labels,
              const std::vector<std::optional<uint32_t>> &predicateLanes) {
  std::vector<uint32_t> reach(statements.size() + 1, 0);
  if (!statements.empty())
    reach[0] = ~uint32_t(0);
  // Passes in text order until no back edge adds lanes (a loop entered
  // by a jump into its middle reaches its header only that way).
  for (bool changed = true; changed;) {
    changed = false;
    // The lanes each predicate holds for, as last set in text order.
    std::map<std::string_view, std::optional<uint32_t>> predicates;
    for (size_t i = 0; i < statements.size(); ++i) {
      const PtxStatement &statement = statements[i];
      uint32_t lanes = reach[i];
      std::string_view head = headOf(statement.opcode);
      std::vector<std::string_view> operands = operandList(statement.operands);
      if (head == "setp" && !operands.empty())
        predicates[operands.front()] =
            i < predicateLanes.size() ? predicateLanes[i] : std::nullopt;
      else if (!operands.empty() && operands.front().starts_with("%p"))
        predicates[operands.front()] = std::nullopt;
      // Which lanes this statement lets through to the next, and to a target.
      uint32_t onward = lanes, taken = 0;
      if (head == "ret" || head == "exit" || head == "trap") {
        onward = statement.predicate.empty() ? 0 : lanes;
      } else if (head == "bra" && !operands.empty()) {
        // Without a predicate, or on one whose lanes are unknown, every lane
        // may take the branch.
        uint32_t branching = lanes;
        bool known = false;
        std::string_view predicate = statement.predicate;
        bool negate = predicate.starts_with('!');
        if (negate)
          predicate.remove_prefix(1);
        if (auto found = predicates.find(predicate);
            !predicate.empty() && found != predicates.end() && found->second) {
          known = true;
          branching = lanes & (negate ? ~*found->second : *found->second);
        }
        taken = branching;
        onward = predicate.empty() ? 0 : known ? lanes & ~branching : lanes;
        auto label = labels.find(operands.front());
        if (label != labels.end() &&
            size_t(label->second) <= statements.size()) {
          uint32_t &target = reach[size_t(label->second)];
          if (label->second <= int(i) && (target | taken) != target)
            changed = true;
          target |= taken;
        }
      }
      reach[i + 1] |= onward;
    }
  }
  reach.pop_back();
  return reach;
}

} // namespace lowbit::report
