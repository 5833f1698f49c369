//===- PtxAddresses.cpp - Where a PTX kernel's accesses point -------------===//
//
// One pass in text order: each register holds the value of its last
// definition above (a loop's induction variable is lane-uniform at either
// definition, which is all the lane pattern needs). Rules, per opcode:
//   - %tid.x and %laneid are the lanes 0..31; %ctaid, %ntid, %tid.y/z,
//     symbols and ld.param are lane-uniform unknowns (an ld.param of a
//     slot whose value the launch gives is that constant); integers are
//     constants;
//   - mov, cvt, cvta copy; add, sub, mul/mad/shl by a constant are exact
//     on the lane offsets; an `or` with a based operand is an addition
//     (LLVM writes disjoint-bit additions as or);
//   - min, max and selp of a lane-varying value with a lane-uniform one
//     are the lane-varying one: a clamp to a uniform bound (the last valid
//     row) is taken as not binding, as in every trip but the last;
//   - any operation on values without a base is evaluated per lane;
//     neg is exact (vLLM aligns a pointer by neg, and, shr of it);
//     uniform inputs give a uniform result; anything else is unknown;
//   - a load's result is data, not an address: it takes no .param slots,
//     and is lane-uniform only when its address is; through lane-varying
//     known addresses it is one unknown base per distinct address (a page
//     number each lane reads from a block table), so the lanes of one
//     page keep their offsets and different pages count apart;
//   - each register remembers the latest global load it is computed from,
//     so an access whose address waits for another load (the KV row after
//     its page number) is known as dependent.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/PtxAddresses.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <numeric>
#include <optional>

namespace lowbit::report {

bool LaneValue::uniform() const {
  return known &&
         std::all_of(lanes.begin(), lanes.end(),
                     [&](int64_t lane) { return lane == lanes[0]; }) &&
         (!based || std::all_of(bases.begin(), bases.end(), [&](uint8_t base) {
           return base == bases[0];
         }));
}

LaneValue LaneValue::constant(int64_t value) {
  LaneValue result;
  result.known = true;
  result.lanes.fill(value);
  return result;
}

LaneValue LaneValue::uniformUnknown() {
  LaneValue result = constant(0);
  result.based = true;
  return result;
}

namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

std::string_view headOf(std::string_view opcode) {
  return opcode.substr(0, opcode.find('.'));
}

LaneValue unknown() { return LaneValue(); }

/// op applied lane by lane to two values without a base.
template <typename Op>
LaneValue perLane(const LaneValue &x, const LaneValue &y, Op op) {
  LaneValue result = LaneValue::constant(0);
  for (int l = 0; l < kWarpLanes; ++l) {
    std::optional<int64_t> lane = op(x.lanes[size_t(l)], y.lanes[size_t(l)]);
    if (!lane)
      return unknown();
    result.lanes[size_t(l)] = *lane;
  }
  return result;
}

/// Numbers the distinct keys of the lanes 0, 1, ... in order of first use.
template <typename Key>
std::array<uint8_t, kWarpLanes>
numbered(const std::array<Key, kWarpLanes> &keys) {
  std::map<Key, uint8_t> ids;
  std::array<uint8_t, kWarpLanes> out{};
  for (size_t l = 0; l < keys.size(); ++l)
    out[l] = ids.emplace(keys[l], uint8_t(ids.size())).first->second;
  return out;
}

/// The bases of a value computed from x and y: lanes share a base where
/// they share each based operand's.
std::array<uint8_t, kWarpLanes> combinedBases(const LaneValue &x,
                                              const LaneValue &y) {
  std::array<std::pair<int, int>, kWarpLanes> keys;
  for (size_t l = 0; l < keys.size(); ++l)
    keys[l] = {x.based ? x.bases[l] : -1, y.based ? y.bases[l] : -1};
  return numbered(keys);
}

/// The largest alignment both values' bases share.
int64_t sharedAlignment(const LaneValue &x, const LaneValue &y) {
  if (x.based && y.based)
    return std::gcd(x.alignment, y.alignment);
  return x.based ? x.alignment : y.based ? y.alignment : 1;
}

/// a * b, saturating at 2^40 (an alignment past it tells nothing more).
int64_t scaledAlignment(int64_t a, int64_t b) {
  constexpr int64_t kLargest = int64_t(1) << 40;
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  if (a == 0 || b == 0)
    return 1;
  return a > kLargest / b ? kLargest : a * b;
}

/// x + sign * y, keeping an unknown base of either.
LaneValue sum(const LaneValue &x, const LaneValue &y, int64_t sign) {
  if (!x.known || !y.known)
    return unknown();
  LaneValue result = x;
  result.based = x.based || y.based;
  result.alignment = sharedAlignment(x, y);
  result.bases = combinedBases(x, y);
  for (int l = 0; l < kWarpLanes; ++l)
    result.lanes[size_t(l)] += sign * y.lanes[size_t(l)];
  return result;
}

/// x * y where one side is a constant (a base scales with it).
LaneValue product(const LaneValue &x, const LaneValue &y) {
  if (!x.known || !y.known)
    return unknown();
  auto isConstant = [](const LaneValue &v) { return !v.based && v.uniform(); };
  if (!x.based && !y.based)
    return perLane(x, y, [](int64_t a, int64_t b) -> std::optional<int64_t> {
      return a * b;
    });
  if (isConstant(y) || isConstant(x)) {
    const LaneValue &scaled = isConstant(y) ? x : y;
    int64_t factor = isConstant(y) ? y.lanes[0] : x.lanes[0];
    LaneValue result = scaled;
    for (int64_t &lane : result.lanes)
      lane *= factor;
    result.alignment = scaledAlignment(scaled.alignment, factor);
    return result;
  }
  if (x.uniform() && y.uniform()) {
    LaneValue result = LaneValue::uniformUnknown();
    result.alignment = scaledAlignment(x.based ? x.alignment : x.lanes[0],
                                       y.based ? y.alignment : y.lanes[0]);
    return result;
  }
  return unknown();
}

/// The low bits of a based value whose base is a multiple of a power of
/// two above them are its lanes' (`and x, 2^k - 1`); clearing them keeps
/// the base (`and x, -2^k`); a shift right by s of a base that is a
/// multiple of 2^s is the base's shift plus the lanes'.
std::optional<LaneValue> alignedBits(std::string_view head, const LaneValue &x,
                                     const LaneValue &y) {
  if (!x.known || !x.based || !y.known || y.based || !y.uniform())
    return std::nullopt;
  int64_t constant = y.lanes[0];
  // A mask of ones from bit k up past any address (bit 40 and above:
  // LLVM's `and (x >> 2), 0x3ff...fc`) only clears the low k bits.
  // Unsigned: a mask up to bit 62 (0x7ff...f8) sums to 2^63 (UBSan found
  // the signed overflow in the KIVI report).
  if (head == "and" && constant > 0) {
    uint64_t low = uint64_t(constant) & (~uint64_t(constant) + 1);
    uint64_t top = uint64_t(constant) + low;
    if ((top & (top - 1)) == 0 && top >= (uint64_t(1) << 40))
      constant = -int64_t(low);
  }
  LaneValue result = x;
  if (head == "and" && constant >= 0 && (constant & (constant + 1)) == 0 &&
      x.alignment % (constant + 1) == 0) {
    result.based = false;
    result.alignment = 1;
    result.bases = {};
    for (int64_t &lane : result.lanes)
      lane &= constant;
    return result;
  }
  if (head == "and" && constant < 0 &&
      constant != std::numeric_limits<int64_t>::min() &&
      ((-constant) & (-constant - 1)) == 0 && x.alignment % (-constant) == 0) {
    for (int64_t &lane : result.lanes)
      lane &= constant;
    return result;
  }
  if (head == "shr" && constant >= 0 && constant < 40 &&
      x.alignment % (int64_t(1) << constant) == 0) {
    result.alignment = x.alignment >> constant;
    for (int64_t &lane : result.lanes)
      lane >>= constant;
    return result;
  }
  return std::nullopt;
}

/// An operation without an exact rule on based values.
template <typename Op>
LaneValue other(std::string_view head, const LaneValue &x, const LaneValue &y,
                Op op) {
  if (!x.known || !y.known)
    return unknown();
  if (!x.based && !y.based)
    return perLane(x, y, op);
  if (std::optional<LaneValue> bits = alignedBits(head, x, y))
    return *bits;
  if (x.uniform() && y.uniform())
    return LaneValue::uniformUnknown();
  bool clamp = head == "min" || head == "max";
  if (clamp && y.uniform())
    return x;
  if (clamp && x.uniform())
    return y;
  // A disjoint-bit addition (LLVM writes `or disjoint` for an add whose
  // bits do not overlap): of a base and lane offsets, or of two bases
  // (a page's row and the kv head's).
  if (head == "or" && (x.based || y.based))
    return sum(x, y, 1);
  return unknown();
}

} // namespace

/// Operands split at the commas outside braces and brackets.
std::vector<std::string_view> operandList(std::string_view operands) {
  std::vector<std::string_view> list;
  int depth = 0;
  size_t start = 0;
  for (size_t at = 0; at <= operands.size(); ++at) {
    char c = at < operands.size() ? operands[at] : ',';
    if (c == '{' || c == '[')
      ++depth;
    else if (c == '}' || c == ']')
      --depth;
    else if (c == ',' && depth == 0) {
      list.push_back(trimmed(operands.substr(start, at - start)));
      start = at + 1;
    }
  }
  return list;
}

std::optional<int64_t> integerOf(std::string_view text) {
  bool negative = !text.empty() && text.front() == '-';
  if (negative)
    text.remove_prefix(1);
  if (!text.empty() && (text.back() == 'U' || text.back() == 'u'))
    text.remove_suffix(1);
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  uint64_t value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return negative ? -int64_t(value) : int64_t(value);
}

std::vector<std::string_view> opcodeParts(std::string_view opcode) {
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= opcode.size();) {
    size_t dot = opcode.find('.', start);
    parts.push_back(opcode.substr(start, dot - start));
    if (dot == std::string_view::npos)
      break;
    start = dot + 1;
  }
  return parts;
}

std::optional<bool> compareIntegers(std::string_view compare, int bits,
                                    int64_t a, int64_t b) {
  uint64_t mask = bits > 0 && bits < 64 ? (uint64_t(1) << bits) - 1 : ~0ull;
  uint64_t ua = uint64_t(a) & mask, ub = uint64_t(b) & mask;
  if (compare == "lt")
    return a < b;
  if (compare == "le")
    return a <= b;
  if (compare == "gt")
    return a > b;
  if (compare == "ge")
    return a >= b;
  if (compare == "eq")
    return ua == ub;
  if (compare == "ne")
    return ua != ub;
  if (compare == "lo")
    return ua < ub;
  if (compare == "ls")
    return ua <= ub;
  if (compare == "hi")
    return ua > ub;
  if (compare == "hs")
    return ua >= ub;
  return std::nullopt;
}

void collectParameters(std::string_view text, std::set<int> &slots) {
  for (size_t at = text.find("_param_"); at != std::string_view::npos;
       at = text.find("_param_", at + 1)) {
    int slot = 0;
    const char *begin = text.data() + at + 7;
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), slot);
    if (ec == std::errc() && end != begin)
      slots.insert(slot);
  }
}

LaneValue AddressDataflow::value(std::string_view operand) const {
  if (operand == "%tid.x" || operand == "%laneid") {
    LaneValue lanes = LaneValue::constant(0);
    for (int l = 0; l < kWarpLanes; ++l)
      lanes.lanes[size_t(l)] = l;
    return lanes;
  }
  if (operand.starts_with("%ntid.") && block[0] > 0 && block[1] > 0 &&
      block[2] > 0) {
    char axis = operand.back();
    if (axis >= 'x' && axis <= 'z')
      return LaneValue::constant(block[size_t(axis - 'x')]);
  }
  if (operand.starts_with("%ctaid") || operand.starts_with("%ntid") ||
      operand.starts_with("%nctaid") || operand == "%tid.y" ||
      operand == "%tid.z")
    return LaneValue::uniformUnknown();
  if (operand.starts_with('%')) {
    auto found = values.find(operand);
    return found == values.end() ? unknown() : found->second;
  }
  if (std::optional<int64_t> integer = integerOf(operand))
    return LaneValue::constant(*integer);
  if (!operand.empty() &&
      (std::isalpha(static_cast<unsigned char>(operand.front())) ||
       operand.front() == '_' || operand.front() == '$')) {
    LaneValue symbol = LaneValue::uniformUnknown(); // a symbol's address
    if (auto align = symbolAlignments.find(operand);
        align != symbolAlignments.end())
      symbol.alignment = align->second;
    return symbol;
  }
  return unknown();
}

std::set<int> AddressDataflow::parameters(std::string_view operand) const {
  std::set<int> slots;
  collectParameters(operand, slots);
  if (auto found = sources.find(operand); found != sources.end())
    slots.insert(found->second.begin(), found->second.end());
  return slots;
}

AddressInfo AddressDataflow::address(std::string_view operands,
                                     int bytes) const {
  AddressInfo info;
  size_t open = operands.find('['), close = operands.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos ||
      close < open)
    return info;
  std::string_view inside =
      trimmed(operands.substr(open + 1, close - open - 1));
  std::string_view base = inside;
  int64_t offset = 0;
  if (size_t plus = inside.find('+'); plus != std::string_view::npos) {
    base = trimmed(inside.substr(0, plus));
    offset = integerOf(trimmed(inside.substr(plus + 1))).value_or(0);
  }
  std::set<int> slots = parameters(base);
  info.parameters.assign(slots.begin(), slots.end());
  if (auto feeding = loadedAt.find(base); feeding != loadedAt.end())
    info.feedingLoad = feeding->second;
  LaneValue lanes = value(base);
  if (!lanes.known || lanes.uniform() || bytes <= 0)
    return info;
  // The base is taken as 128-byte aligned (cudaMalloc aligns to 256).
  // Lines of different bases (pages) are different lines.
  std::set<std::pair<int, int64_t>> lines;
  auto line = [](int64_t address) {
    return address >= 0 ? address / 128 : -((-address + 127) / 128);
  };
  for (size_t l = 0; l < lanes.lanes.size(); ++l) {
    int64_t lane = lanes.lanes[l];
    int base = lanes.based ? lanes.bases[l] : 0;
    for (int64_t at = line(lane + offset),
                 last = line(lane + offset + bytes - 1);
         at <= last; ++at)
      lines.insert({base, at});
  }
  info.warpLines = int(lines.size());
  int contiguousPairs = 0;
  for (size_t l = 1; l < lanes.lanes.size(); ++l)
    contiguousPairs += lanes.lanes[l] - lanes.lanes[l - 1] == bytes &&
                       lanes.bases[l] == lanes.bases[l - 1];
  info.lanesContiguous = 2 * contiguousPairs > kWarpLanes;
  return info;
}

void AddressDataflow::step(std::string_view opcode, std::string_view operands) {
  int index = statement++;
  std::string_view head = headOf(opcode);
  if (head == "st" || head == "red" || head == "bra" || head == "bar" ||
      head == "barrier" || head == "ret" || head == "exit" ||
      head == "membar" || head == "fence" || head == "call")
    return;
  std::vector<std::string_view> list = operandList(operands);
  if (list.empty())
    return;
  std::string_view destination = list.front();
  // Vector or predicate-pair destinations hold data: forget them.
  if (destination.starts_with('{') ||
      destination.find('|') != std::string_view::npos) {
    size_t at = 0;
    while ((at = destination.find('%', at)) != std::string_view::npos) {
      size_t end = destination.find_first_of(" ,}|", at);
      std::string_view name = destination.substr(at, end - at);
      values.erase(std::string(name));
      sources.erase(std::string(name));
      loadedAt.erase(std::string(name));
      at = end;
    }
    return;
  }
  std::string name(destination);
  auto operand = [&](size_t i) {
    return i < list.size() ? value(list[i]) : unknown();
  };

  // Slots: a loaded value is data (except ld.param, the slot itself).
  std::set<int> slots;
  if (head == "ld" || head == "ldu" || head == "atom") {
    if (opcode.find(".param") != std::string_view::npos)
      slots = parameters(list.size() > 1 ? list[1] : "");
  } else {
    for (size_t i = 1; i < list.size(); ++i) {
      std::set<int> more = parameters(list[i]);
      slots.insert(more.begin(), more.end());
    }
  }

  LaneValue result;
  if (head == "mov" || head == "cvt" || head == "cvta")
    result = operand(1);
  else if (head == "add")
    result = sum(operand(1), operand(2), 1);
  else if (head == "sub")
    result = sum(operand(1), operand(2), -1);
  else if (head == "neg")
    result = product(operand(1), LaneValue::constant(-1));
  else if (head == "not" && opcode.find(".pred") == std::string_view::npos) {
    // ~x = -x - 1, exact on lanes without a base.
    LaneValue x = operand(1);
    if (x.known && !x.based)
      result =
          sum(product(x, LaneValue::constant(-1)), LaneValue::constant(1), -1);
  } else if (head == "mul" && opcode.find(".hi") == std::string_view::npos)
    result = product(operand(1), operand(2));
  else if (head == "mad" && opcode.find(".hi") == std::string_view::npos)
    result = sum(product(operand(1), operand(2)), operand(3), 1);
  else if (head == "shl") {
    LaneValue shift = operand(2);
    result = shift.known && !shift.based && shift.uniform() &&
                     shift.lanes[0] >= 0 && shift.lanes[0] < 63
                 ? product(operand(1),
                           LaneValue::constant(int64_t(1) << shift.lanes[0]))
                 : unknown();
  } else if (head == "shr")
    result = other(head, operand(1), operand(2),
                   [](int64_t a, int64_t b) -> std::optional<int64_t> {
                     if (b < 0 || b > 63)
                       return std::nullopt;
                     return a >> b;
                   });
  else if (head == "bfe") {
    // bfe a, pos, len = (a >> pos) & (2^len - 1): LLVM's form of a lane's
    // index bits (tid / 4 % 8).
    LaneValue position = operand(2), length = operand(3);
    bool constants = position.known && !position.based && position.uniform() &&
                     length.known && !length.based && length.uniform();
    int64_t shift = constants ? position.lanes[0] : -1,
            bits = constants ? length.lanes[0] : -1;
    result =
        shift >= 0 && shift < 64 && bits > 0 && bits < 63
            ? other("and",
                    other("shr", operand(1), LaneValue::constant(shift),
                          [](int64_t a, int64_t b) -> std::optional<int64_t> {
                            return a >> b;
                          }),
                    LaneValue::constant((int64_t(1) << bits) - 1),
                    [](int64_t a, int64_t b) -> std::optional<int64_t> {
                      return a & b;
                    })
            : unknown();
  } else if (head == "and" || head == "or" || head == "xor" || head == "min" ||
             head == "max" || head == "div" || head == "rem")
    result = other(head, operand(1), operand(2),
                   [head](int64_t a, int64_t b) -> std::optional<int64_t> {
                     if (head == "and")
                       return a & b;
                     if (head == "or")
                       return a | b;
                     if (head == "xor")
                       return a ^ b;
                     if (head == "min")
                       return std::min(a, b);
                     if (head == "max")
                       return std::max(a, b);
                     if (b == 0)
                       return std::nullopt;
                     return head == "div" ? a / b : a % b;
                   });
  else if (head == "setp") {
    // A compare of known lanes is 0 or 1 per lane (selp reads it).
    std::vector<std::string_view> parts = opcodeParts(opcode);
    LaneValue x = operand(1), y = operand(2);
    if (parts.size() == 3 && parts[2].size() > 1 && parts[2].front() != 'f' &&
        list.size() == 3 && x.known && y.known && !x.based && !y.based) {
      int bits = 0;
      std::from_chars(parts[2].data() + 1, parts[2].data() + parts[2].size(),
                      bits);
      result = LaneValue::constant(0);
      for (int l = 0; l < kWarpLanes; ++l) {
        std::optional<bool> holds = compareIntegers(
            parts[1], bits, x.lanes[size_t(l)], y.lanes[size_t(l)]);
        if (!holds) {
          result = unknown();
          break;
        }
        result.lanes[size_t(l)] = *holds;
      }
    }
  } else if (head == "selp") {
    LaneValue x = operand(1), y = operand(2), predicate = operand(3);
    if (x.known && y.known && predicate.known && !predicate.based) {
      // The predicate's lanes are known: each lane's choice, exactly.
      result = x;
      result.based = x.based || y.based;
      result.alignment = sharedAlignment(x, y);
      bool mixed = x.based != y.based;
      std::array<std::pair<int, int>, kWarpLanes> keys;
      for (int l = 0; l < kWarpLanes && result.known; ++l) {
        bool first = predicate.lanes[size_t(l)] != 0;
        keys[size_t(l)] = {first, (first ? x : y).bases[size_t(l)]};
        if (mixed && (first ? !x.based : !y.based))
          result = unknown(); // a base in some lanes only
        else
          result.lanes[size_t(l)] = (first ? x : y).lanes[size_t(l)];
      }
      if (result.known && result.based)
        result.bases = numbered(keys);
    } else if (x.known && y.known && x.based == y.based && x.lanes == y.lanes)
      result = x;
    else if (x.known && y.uniform())
      result = x;
    else if (y.known && x.uniform())
      result = y;
  } else if ((head == "ld" || head == "ldu") && slots.size() == 1 &&
             bound.count(*slots.begin())) {
    result = LaneValue::constant(bound.at(*slots.begin()));
  } else if (head == "ld" || head == "ldu") {
    LaneValue address =
        value(list.size() > 1
                  ? trimmed(list[1].substr(1, list[1].find_first_of("+]") - 1))
                  : "");
    if (opcode.find(".param") != std::string_view::npos || address.uniform()) {
      result = LaneValue::uniformUnknown();
    } else if (address.known) {
      // One unknown word per distinct address.
      std::array<std::pair<int, int64_t>, kWarpLanes> keys;
      for (size_t l = 0; l < keys.size(); ++l)
        keys[l] = {address.based ? address.bases[l] : 0, address.lanes[l]};
      result = LaneValue::uniformUnknown();
      result.bases = numbered(keys);
    }
    // A buffer's address, as the allocator aligns it.
    if (opcode.find(".param") != std::string_view::npos && slots.size() == 1 &&
        buffers.count(*slots.begin()))
      result.alignment = kAllocationAlignment;
  }
  values[name] = result;
  sources[name] = std::move(slots);
  // The latest global load the value waits for: this one for a load from
  // global (or generic) memory, else its operands'.
  bool fromMemory = (head == "ld" || head == "ldu") &&
                    opcode.find(".param") == std::string_view::npos &&
                    opcode.find(".shared") == std::string_view::npos &&
                    opcode.find(".local") == std::string_view::npos &&
                    opcode.find(".const") == std::string_view::npos;
  int feeding = -1;
  if (fromMemory)
    feeding = index;
  else if (head != "ld" && head != "ldu")
    for (size_t i = 1; i < list.size(); ++i)
      if (auto found = loadedAt.find(list[i]); found != loadedAt.end())
        feeding = std::max(feeding, found->second);
  if (feeding >= 0)
    loadedAt[name] = feeding;
  else
    loadedAt.erase(name);
}

} // namespace lowbit::report
