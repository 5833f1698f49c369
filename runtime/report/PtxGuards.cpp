//===- PtxGuards.cpp - Which threads of a block run each statement --------===//
//
// Two steps over one kernel body:
//   1. In text order, every integer register computed from %tid.x alone
//      (through mov, cvt, add, sub, mul, mad, shl, shr, and, or, xor, div,
//      rem, min, max, bfe, selp) holds its value for each x index
//      0..1023; a setp on such values holds, per x index, whether it is
//      true, and and/or/xor/not of predicates combine them. The last
//      definition above a use wins; anything else (loaded data, %ctaid, a
//      loop counter) is unknown.
//   2. Basic blocks split at labels and after branches and returns; from
//      the entry, a branch on a known predicate sends the threads where it
//      holds to its target and the rest to the next block, one on an
//      unknown predicate sends every thread both ways. Reaching sets only
//      grow, so the propagation ends.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/PtxGuards.h"
#include "runtime/report/PtxAddresses.h"

#include <algorithm>
#include <optional>
#include <set>

namespace lowbit::report {

namespace {

using ThreadValues = std::vector<int64_t>; // one per x index

std::string_view headOf(std::string_view opcode) {
  return opcode.substr(0, opcode.find('.'));
}

/// The integer type's bits and signedness from an opcode's suffixes
/// (setp.lt.u32 -> 32, unsigned); 64 bits signed without one.
void typeOf(std::string_view opcode, int &bits, bool &isSigned) {
  bits = 64;
  isSigned = true;
  for (std::string_view type :
       {"s16", "s32", "s64", "u16", "u32", "u64", "b16", "b32", "b64"})
    if (opcode.find(std::string(".") + std::string(type)) !=
        std::string_view::npos) {
      isSigned = type.front() == 's';
      bits = type.substr(1) == "16" ? 16 : type.substr(1) == "32" ? 32 : 64;
      return;
    }
}

/// `value` read as an integer of `bits` bits, signed or not.
int64_t asType(int64_t value, int bits, bool isSigned) {
  if (bits >= 64)
    return value;
  uint64_t mask = (uint64_t(1) << bits) - 1;
  uint64_t raw = uint64_t(value) & mask;
  if (isSigned && (raw >> (bits - 1)) & 1)
    return int64_t(raw | ~mask);
  return int64_t(raw);
}

class TidValues {
public:
  /// Records the effect of one statement on the registers it defines.
  void step(const PtxStatement &statement);
  /// A predicate operand ("%p1", "!%p1"); nullopt when unknown.
  std::optional<ThreadSet> predicate(std::string_view text) const;

private:
  std::optional<ThreadValues> value(std::string_view operand) const;
  void forget(std::string_view destination);

  std::map<std::string, ThreadValues, std::less<>> integers;
  std::map<std::string, ThreadSet, std::less<>> predicates;
};

std::optional<ThreadValues> TidValues::value(std::string_view operand) const {
  if (operand == "%tid.x") {
    ThreadValues values(kMaxBlockThreadsX);
    for (int x = 0; x < kMaxBlockThreadsX; ++x)
      values[size_t(x)] = x;
    return values;
  }
  if (std::optional<int64_t> constant = integerOf(operand))
    return ThreadValues(kMaxBlockThreadsX, *constant);
  if (auto found = integers.find(operand); found != integers.end())
    return found->second;
  return std::nullopt;
}

std::optional<ThreadSet> TidValues::predicate(std::string_view text) const {
  bool negated = !text.empty() && text.front() == '!';
  if (negated)
    text.remove_prefix(1);
  auto found = predicates.find(text);
  if (found == predicates.end())
    return std::nullopt;
  return negated ? ~found->second : found->second;
}

void TidValues::forget(std::string_view destination) {
  size_t at = 0;
  while ((at = destination.find('%', at)) != std::string_view::npos) {
    size_t end = destination.find_first_of(" ,}|", at);
    std::string name(destination.substr(at, end - at));
    integers.erase(name);
    predicates.erase(name);
    at = end;
  }
}

void TidValues::step(const PtxStatement &statement) {
  std::string_view head = headOf(statement.opcode);
  if (head == "st" || head == "red" || head == "bra" || head == "bar" ||
      head == "barrier" || head == "ret" || head == "exit" ||
      head == "membar" || head == "fence" || head == "call")
    return;
  std::vector<std::string_view> list = operandList(statement.operands);
  if (list.empty())
    return;
  std::string_view destination = list.front();
  forget(destination);
  if (!statement.predicate.empty() || destination.starts_with('{') ||
      destination.find('|') != std::string_view::npos)
    return; // a predicated definition keeps some threads' old value
  std::string name(destination);
  std::string_view opcode = statement.opcode;
  int bits = 64;
  bool isSigned = true;
  typeOf(opcode, bits, isSigned);

  if (opcode.ends_with(".pred")) {
    // and/or/xor/not/mov of predicates.
    std::vector<std::optional<ThreadSet>> inputs;
    for (size_t i = 1; i < list.size(); ++i)
      inputs.push_back(predicate(list[i]));
    if (inputs.empty() ||
        std::any_of(inputs.begin(), inputs.end(),
                    [](const std::optional<ThreadSet> &p) { return !p; }))
      return;
    ThreadSet result = *inputs[0];
    if (head == "not")
      result = ~result;
    for (size_t i = 1; i < inputs.size(); ++i)
      result = head == "and"   ? result & *inputs[i]
               : head == "or"  ? result | *inputs[i]
               : head == "xor" ? result ^ *inputs[i]
                               : result;
    if (head == "and" || head == "or" || head == "xor" || head == "not" ||
        head == "mov")
      predicates[name] = result;
    return;
  }
  if (head == "setp") {
    // setp.CMP.TYPE p, a, b (a combining setp.CMP.and.TYPE is unknown).
    std::string_view compare = opcode.substr(5, opcode.find('.', 5) - 5);
    if (list.size() != 3)
      return;
    std::optional<ThreadValues> a = value(list[1]), b = value(list[2]);
    if (!a || !b)
      return;
    static const std::set<std::string_view> kCompares = {
        "eq", "ne", "lt", "lo", "le", "ls", "gt", "hi", "ge", "hs"};
    if (!kCompares.count(compare))
      return;
    ThreadSet result;
    for (size_t x = 0; x < size_t(kMaxBlockThreadsX); ++x) {
      int64_t l = asType((*a)[x], bits, isSigned),
              r = asType((*b)[x], bits, isSigned);
      bool unsignedCompare = !isSigned && bits == 64;
      auto less = [&](int64_t p, int64_t q) {
        return unsignedCompare ? uint64_t(p) < uint64_t(q) : p < q;
      };
      bool holds = compare == "eq"                      ? l == r
                   : compare == "ne"                    ? l != r
                   : compare == "lt" || compare == "lo" ? less(l, r)
                   : compare == "le" || compare == "ls" ? !less(r, l)
                   : compare == "gt" || compare == "hi" ? less(r, l)
                                                        : !less(l, r);
      result[x] = holds;
    }
    predicates[name] = result;
    return;
  }
  if (head == "selp") {
    std::optional<ThreadValues> a = value(list[1]), b = value(list[2]);
    std::optional<ThreadSet> p =
        list.size() > 3 ? predicate(list[3]) : std::nullopt;
    if (!a || !b || !p)
      return;
    ThreadValues result(kMaxBlockThreadsX);
    for (size_t x = 0; x < result.size(); ++x)
      result[x] = (*p)[x] ? (*a)[x] : (*b)[x];
    integers[name] = std::move(result);
    return;
  }
  std::vector<ThreadValues> inputs;
  for (size_t i = 1; i < list.size(); ++i) {
    std::optional<ThreadValues> input = value(list[i]);
    if (!input)
      return;
    inputs.push_back(std::move(*input));
  }
  bool wide = opcode.find(".wide") != std::string_view::npos;
  if (opcode.find(".hi") != std::string_view::npos ||
      opcode.find(".f") != std::string_view::npos)
    return;
  auto arity = [&](size_t n) { return inputs.size() == n; };
  ThreadValues result(kMaxBlockThreadsX);
  for (size_t x = 0; x < result.size(); ++x) {
    auto in = [&](size_t i) { return asType(inputs[i][x], bits, isSigned); };
    int64_t r = 0;
    if ((head == "mov" || head == "cvt") && arity(1))
      r = inputs[0][x];
    else if (head == "add" && arity(2))
      r = in(0) + in(1);
    else if (head == "sub" && arity(2))
      r = in(0) - in(1);
    else if (head == "mul" && arity(2))
      r = in(0) * in(1);
    else if (head == "mad" && arity(3))
      r = in(0) * in(1) + in(2);
    else if (head == "shl" && arity(2) && inputs[1][x] >= 0 &&
             inputs[1][x] < 63)
      r = in(0) << inputs[1][x];
    else if (head == "shr" && arity(2) && inputs[1][x] >= 0 &&
             inputs[1][x] < 64)
      r = isSigned ? in(0) >> inputs[1][x]
                   : int64_t(uint64_t(in(0)) >> inputs[1][x]);
    else if (head == "and" && arity(2))
      r = in(0) & in(1);
    else if (head == "or" && arity(2))
      r = in(0) | in(1);
    else if (head == "xor" && arity(2))
      r = in(0) ^ in(1);
    else if ((head == "div" || head == "rem") && arity(2) && in(1) != 0)
      r = head == "div" ? in(0) / in(1) : in(0) % in(1);
    else if (head == "min" && arity(2))
      r = std::min(in(0), in(1));
    else if (head == "max" && arity(2))
      r = std::max(in(0), in(1));
    else if (head == "bfe" && arity(3) && inputs[1][x] >= 0 &&
             inputs[1][x] < 64 && inputs[2][x] > 0 && inputs[2][x] < 63)
      r = (in(0) >> inputs[1][x]) & ((int64_t(1) << inputs[2][x]) - 1);
    else
      return;
    result[x] = wide ? r : asType(r, bits, isSigned);
  }
  integers[name] = std::move(result);
}

bool endsFlow(std::string_view head) {
  return head == "bra" || head == "ret" || head == "exit";
}

} // namespace

std::vector<ThreadSet>
threadsRunning(const std::vector<PtxStatement> &statements,
               const std::map<std::string, int, std::less<>> &labels) {
  size_t count = statements.size();
  // Step 1: each statement's predicate, as known where it stands.
  TidValues values;
  std::vector<std::optional<ThreadSet>> guards(count);
  for (size_t i = 0; i < count; ++i) {
    if (!statements[i].predicate.empty())
      guards[i] = values.predicate(statements[i].predicate);
    values.step(statements[i]);
  }
  // Step 2: basic blocks, [leader, next leader).
  std::set<int> leaders{0};
  for (const auto &[label, index] : labels)
    leaders.insert(index);
  for (size_t i = 0; i < count; ++i)
    if (endsFlow(headOf(statements[i].opcode)))
      leaders.insert(int(i) + 1);
  std::vector<int> starts(leaders.begin(), leaders.end());
  while (!starts.empty() && starts.back() >= int(count))
    starts.pop_back();
  auto blockOf = [&](int statement) {
    return int(std::upper_bound(starts.begin(), starts.end(), statement) -
               starts.begin()) -
           1;
  };
  std::vector<ThreadSet> reaching(starts.size());
  ThreadSet everyone;
  everyone.set();
  if (!starts.empty())
    reaching[0] = everyone;
  std::vector<int> work{0};
  auto send = [&](int statement, const ThreadSet &threads) {
    if (statement < 0 || statement >= int(count) || threads.none())
      return;
    int block = blockOf(statement);
    ThreadSet grown = reaching[size_t(block)] | threads;
    if (grown != reaching[size_t(block)]) {
      reaching[size_t(block)] = grown;
      work.push_back(block);
    }
  };
  while (!work.empty() && !starts.empty()) {
    int block = work.back();
    work.pop_back();
    int end = size_t(block) + 1 < starts.size() ? starts[size_t(block) + 1]
                                                : int(count);
    int last = end - 1;
    const PtxStatement &exit = statements[size_t(last)];
    std::string_view head = headOf(exit.opcode);
    const ThreadSet &in = reaching[size_t(block)];
    ThreadSet taken = exit.predicate.empty()
                          ? everyone
                          : guards[size_t(last)].value_or(everyone);
    ThreadSet fallThrough = exit.predicate.empty()
                                ? ThreadSet()
                                : ~guards[size_t(last)].value_or(ThreadSet());
    if (!endsFlow(head)) {
      send(end, in);
      continue;
    }
    if (head == "bra") {
      std::vector<std::string_view> target = operandList(exit.operands);
      auto label =
          target.size() == 1 ? labels.find(target.front()) : labels.end();
      // An unknown target (brx, a malformed line) may go anywhere after.
      if (label == labels.end())
        send(end, in);
      else
        send(label->second, in & taken);
    }
    send(end, in & fallThrough);
  }
  std::vector<ThreadSet> running(count);
  for (size_t i = 0; i < count; ++i) {
    running[i] = reaching[size_t(blockOf(int(i)))];
    if (!statements[i].predicate.empty())
      running[i] &= guards[i].value_or(everyone);
  }
  return running;
}

} // namespace lowbit::report
