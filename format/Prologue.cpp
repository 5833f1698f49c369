//===- Prologue.cpp - The reference prologues -----------------------------===//
//
// Written for the reader: each prologue is a loop over rows doing exactly
// the f32 operations docs/fusion.md lists, in that order. Built with
// -ffp-contract=off so no multiply and add fuse.
//
//===----------------------------------------------------------------------===//

#include "format/Prologue.h"

#include "format/Codec.h"
#include "format/PrologueLimits.h"
#include "format/SchemeText.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace lowbit {
namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

bool isPowerOfTwo(int64_t value) {
  return value > 0 && (value & (value - 1)) == 0;
}

constexpr int64_t kMinHadamardBlock = 16, kMaxHadamardBlock = 4096;
std::optional<float> parseFloat(std::string_view text) {
  float value = 0;
  auto [end, code] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (code != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

std::string printFloat(float value) {
  char buffer[32];
  auto [end, code] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

//===----------------------------------------------------------------------===//
// The elementwise expression of map(...)
//===----------------------------------------------------------------------===//

/// Recursive descent over `text`:
///   sum     := product (('+' | '-') product)*
///   product := unary (('*' | '/') unary)*
///   unary   := '-' unary | primary
///   primary := NUMBER | 'x' | '(' sum ')' | NAME '(' sum (',' sum)? ')'
/// Each result carries its tree depth (leaf 1, each operator one more), and
/// the parser refuses a tree deeper than kMaxExprDepth or larger than
/// kMaxExprNodes, and its own recursion past kMaxExprNesting (parentheses,
/// unary '-' and calls open at once), so that nothing recursing over the
/// text or the tree (this parser, printExpr, evaluateExpr, the lowering)
/// can exhaust the stack (format/PrologueLimits.h).
class ExprParser {
public:
  ExprParser(std::string_view text, std::string *error)
      : text(text), error(error) {}

  std::optional<PrologueExpr> parse() {
    if (text.size() > kMaxExprLength)
      return refuse("the expression has " + std::to_string(text.size()) +
                    " characters, more than the limit of " +
                    std::to_string(kMaxExprLength));
    std::optional<Parsed> parsed = parseSum();
    if (!parsed)
      return std::nullopt;
    skipSpaces();
    if (position != text.size())
      return refuse("unexpected '" + std::string(text.substr(position)) + "'");
    return std::move(parsed->expr);
  }

private:
  using Op = PrologueExpr::Op;
  struct Parsed {
    PrologueExpr expr;
    int depth = 1;
  };
  std::string_view text;
  std::string *error;
  size_t position = 0;
  /// Levels of '(', unary '-' and calls open at `position`.
  int nesting = 0;
  /// Nodes made so far.
  size_t nodes = 0;

  std::nullopt_t refuse(std::string message) {
    fail(error, "map(" + shortText() + "): " + message);
    return std::nullopt;
  }
  /// The expression as the messages quote it: a hostile one may be long.
  std::string shortText() const {
    constexpr size_t kQuoted = 64;
    if (text.size() <= kQuoted)
      return std::string(text);
    return std::string(text.substr(0, kQuoted)) + "...";
  }
  std::nullopt_t refuseNesting() {
    return refuse("the expression nests deeper than the limit of " +
                  std::to_string(kMaxExprNesting) +
                  " levels of parentheses, calls and unary '-'");
  }
  std::nullopt_t refuseDepth() {
    return refuse("the expression tree is deeper than the limit of " +
                  std::to_string(kMaxExprDepth) +
                  " levels (each operator, unary '-' and call is one)");
  }
  /// Counts a node; false past kMaxExprNodes.
  bool countNode() { return ++nodes <= kMaxExprNodes; }
  std::nullopt_t refuseNodes() {
    return refuse("the expression has more than the limit of " +
                  std::to_string(kMaxExprNodes) + " operands and operations");
  }
  /// Opens one level of nesting for the scope of a recursive call.
  struct Level {
    int &nesting;
    explicit Level(int &nesting) : nesting(++nesting) {}
    ~Level() { --nesting; }
  };
  void skipSpaces() {
    while (position < text.size() && text[position] == ' ')
      ++position;
  }
  bool accept(char c) {
    skipSpaces();
    if (position < text.size() && text[position] == c) {
      ++position;
      return true;
    }
    return false;
  }
  std::optional<Parsed> node(Op op, std::vector<Parsed> operands) {
    if (!countNode())
      return refuseNodes();
    Parsed parsed;
    parsed.expr.op = op;
    int deepest = 0;
    for (Parsed &operand : operands) {
      deepest = std::max(deepest, operand.depth);
      parsed.expr.operands.push_back(std::move(operand.expr));
    }
    parsed.depth = deepest + 1;
    if (parsed.depth > kMaxExprDepth)
      return refuseDepth();
    return parsed;
  }

  std::optional<Parsed> parseSum() {
    std::optional<Parsed> left = parseProduct();
    while (left) {
      bool plus = accept('+');
      if (!plus && !accept('-'))
        break;
      std::optional<Parsed> right = parseProduct();
      if (!right)
        return std::nullopt;
      std::vector<Parsed> operands;
      operands.push_back(std::move(*left));
      operands.push_back(std::move(*right));
      left = node(plus ? Op::Add : Op::Sub, std::move(operands));
    }
    return left;
  }
  std::optional<Parsed> parseProduct() {
    std::optional<Parsed> left = parseUnary();
    while (left) {
      bool times = accept('*');
      if (!times && !accept('/'))
        break;
      std::optional<Parsed> right = parseUnary();
      if (!right)
        return std::nullopt;
      std::vector<Parsed> operands;
      operands.push_back(std::move(*left));
      operands.push_back(std::move(*right));
      left = node(times ? Op::Mul : Op::Div, std::move(operands));
    }
    return left;
  }
  std::optional<Parsed> parseUnary() {
    if (!accept('-'))
      return parsePrimary();
    Level level(nesting);
    if (nesting > kMaxExprNesting)
      return refuseNesting();
    std::optional<Parsed> operand = parseUnary();
    if (!operand)
      return std::nullopt;
    std::vector<Parsed> operands;
    operands.push_back(std::move(*operand));
    return node(Op::Neg, std::move(operands));
  }
  std::optional<Parsed> parsePrimary() {
    skipSpaces();
    if (position == text.size())
      return refuse("expected an operand at the end");
    if (accept('(')) {
      Level level(nesting);
      if (nesting > kMaxExprNesting)
        return refuseNesting();
      std::optional<Parsed> inner = parseSum();
      if (inner && !accept(')'))
        return refuse("missing ')'");
      return inner;
    }
    size_t start = position;
    char first = text[position];
    if (std::isdigit(static_cast<unsigned char>(first)) || first == '.') {
      while (position < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[position])) ||
              text[position] == '.' ||
              ((text[position] == '-' || text[position] == '+') &&
               (text[position - 1] == 'e' || text[position - 1] == 'E'))))
        ++position;
      std::string_view number = text.substr(start, position - start);
      std::optional<float> value = parseFloat(number);
      if (!value || !std::isfinite(*value))
        return refuse("bad number '" + std::string(number) + "'");
      if (!countNode())
        return refuseNodes();
      Parsed constant;
      constant.expr.op = Op::Constant;
      constant.expr.value = *value;
      return constant;
    }
    while (position < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[position])) ||
            text[position] == '_'))
      ++position;
    std::string_view name = text.substr(start, position - start);
    if (name.empty())
      return refuse("unexpected '" + std::string(text.substr(start, 1)) + "'");
    if (name == "x")
      return countNode() ? std::optional<Parsed>(Parsed{}) : refuseNodes();
    static const std::array<std::pair<std::string_view, Op>, 7> functions = {
        {{"abs", Op::Abs},
         {"sqrt", Op::Sqrt},
         {"exp", Op::Exp},
         {"silu", Op::Silu},
         {"sigmoid", Op::Sigmoid},
         {"min", Op::Min},
         {"max", Op::Max}}};
    auto found = std::find_if(functions.begin(), functions.end(),
                              [&](auto &entry) { return entry.first == name; });
    if (found == functions.end())
      return refuse("unknown name '" + std::string(name) +
                    "' (want x, a number, abs, sqrt, exp, silu, sigmoid, "
                    "min, max)");
    bool binary = found->second == Op::Min || found->second == Op::Max;
    if (!accept('('))
      return refuse("'" + std::string(name) + "' needs '('");
    Level level(nesting);
    if (nesting > kMaxExprNesting)
      return refuseNesting();
    std::vector<Parsed> operands;
    for (int index = 0; index < (binary ? 2 : 1); ++index) {
      if (index == 1 && !accept(','))
        return refuse("'" + std::string(name) + "' takes two arguments");
      std::optional<Parsed> operand = parseSum();
      if (!operand)
        return std::nullopt;
      operands.push_back(std::move(*operand));
    }
    if (!accept(')'))
      return refuse("missing ')' after the arguments of '" + std::string(name) +
                    "'");
    return node(found->second, std::move(operands));
  }
};

std::string printExpr(const PrologueExpr &expr) {
  using Op = PrologueExpr::Op;
  auto operand = [&](size_t index) { return printExpr(expr.operands[index]); };
  auto infix = [&](const char *op) {
    return "(" + operand(0) + op + operand(1) + ")";
  };
  auto call = [&](const char *name) {
    std::string text = std::string(name) + "(" + operand(0);
    if (expr.operands.size() == 2)
      text += "," + operand(1);
    return text + ")";
  };
  switch (expr.op) {
  case Op::X:
    return "x";
  case Op::Constant:
    return printFloat(expr.value);
  case Op::Neg:
    return "(-" + operand(0) + ")";
  case Op::Add:
    return infix("+");
  case Op::Sub:
    return infix("-");
  case Op::Mul:
    return infix("*");
  case Op::Div:
    return infix("/");
  case Op::Min:
    return call("min");
  case Op::Max:
    return call("max");
  case Op::Abs:
    return call("abs");
  case Op::Sqrt:
    return call("sqrt");
  case Op::Exp:
    return call("exp");
  case Op::Silu:
    return call("silu");
  case Op::Sigmoid:
    return call("sigmoid");
  }
  return "";
}

/// The depth of a tree built in C++ rather than parsed, walked with an
/// explicit stack: the tree may be deeper than a recursion could follow.
int exprDepth(const PrologueExpr &root) {
  std::vector<std::pair<const PrologueExpr *, int>> pending = {{&root, 1}};
  int deepest = 0;
  while (!pending.empty()) {
    auto [expr, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    if (deepest > kMaxExprDepth)
      break;
    for (const PrologueExpr &operand : expr->operands)
      pending.push_back({&operand, depth + 1});
  }
  return deepest;
}

/// `name(key=value)` arguments: returns the inside of the parentheses, or
/// nullopt (with an error) when they are unbalanced.
std::optional<std::string_view> argumentsOf(std::string_view text, size_t open,
                                            std::string *error) {
  if (text.back() != ')') {
    fail(error, "missing ')' in prologue '" + std::string(text) + "'");
    return std::nullopt;
  }
  return text.substr(open + 1, text.size() - open - 2);
}

/// Sum of squares of one row in the documented warp order
/// (docs/fusion.md): 32 strided partial sums from +0 (partial i adds
/// columns i, i + 32, ... left to right), then a halving tree
/// p[i] = p[i] + p[i + h] for h = 16, 8, 4, 2, 1. That is what a warp
/// computes with xor shuffles, and what the CPU lowering replays.
float rowSumOfSquares(std::span<const float> row) {
  std::array<float, kRowSumLanes> partial{};
  for (size_t col = 0; col < row.size(); ++col)
    partial[col % kRowSumLanes] =
        partial[col % kRowSumLanes] + row[col] * row[col];
  for (size_t half = kRowSumLanes / 2; half >= 1; half /= 2)
    for (size_t lane = 0; lane < half; ++lane)
      partial[lane] = partial[lane] + partial[lane + half];
  return partial[0];
}

/// 1 / sqrt(sum / cols + eps), the factor RMSNorm multiplies a row by.
float rmsFactor(std::span<const float> row, float eps) {
  float meanSquare = rowSumOfSquares(row) / float(row.size());
  return 1.0f / std::sqrt(meanSquare + eps);
}

void rmsNormRows(std::span<const float> input, int64_t rows, int64_t cols,
                 std::span<const float> weight, float eps,
                 std::vector<float> &output) {
  for (int64_t row = 0; row < rows; ++row) {
    std::span<const float> values = input.subspan(size_t(row * cols), cols);
    float factor = rmsFactor(values, eps);
    for (int64_t col = 0; col < cols; ++col)
      output[size_t(row * cols + col)] = values[col] * factor * weight[col];
  }
}

/// In-place unnormalized Walsh-Hadamard transform of `block` (Sylvester
/// order): for h = 1, 2, 4, ..., pairs (j, j + h) of each 2h-chunk become
/// (a + b, a - b).
void walshHadamard(std::span<float> block) {
  for (size_t half = 1; half < block.size(); half *= 2)
    for (size_t start = 0; start < block.size(); start += 2 * half)
      for (size_t j = start; j < start + half; ++j) {
        float a = block[j], b = block[j + half];
        block[j] = a + b;
        block[j + half] = a - b;
      }
}

bool checkSize(std::span<const float> data, size_t want, const char *what,
               std::string *error) {
  if (data.size() == want)
    return true;
  return fail(error, std::string(what) + " has " + std::to_string(data.size()) +
                         " values, the prologue needs " + std::to_string(want));
}

} // namespace

std::vector<PrologueOperand> prologueOperands(PrologueKind kind) {
  switch (kind) {
  case PrologueKind::RmsNorm:
    return {PrologueOperand::Weight};
  case PrologueKind::AddRmsNorm:
    return {PrologueOperand::Residual, PrologueOperand::Weight};
  case PrologueKind::Smooth:
    return {PrologueOperand::Smooth};
  case PrologueKind::SiluMul:
  case PrologueKind::Hadamard:
  case PrologueKind::Map:
    return {};
  }
  return {};
}

std::vector<PrologueOperands>
bindPrologueOperands(std::span<const Prologue> chain,
                     std::span<const std::vector<float>> sides) {
  std::vector<PrologueOperands> operands;
  size_t nextSide = 0;
  for (const Prologue &prologue : chain) {
    PrologueOperands set;
    for (PrologueOperand operand : prologueOperands(prologue.kind)) {
      if (nextSide == sides.size())
        break;
      std::span<const float> data = sides[nextSide++];
      (operand == PrologueOperand::Weight     ? set.weight
       : operand == PrologueOperand::Residual ? set.residual
                                              : set.smooth) = data;
    }
    operands.push_back(set);
  }
  return operands;
}

bool prologueWritesResidual(PrologueKind kind) {
  return kind == PrologueKind::AddRmsNorm;
}

std::string_view prologueName(PrologueKind kind) {
  switch (kind) {
  case PrologueKind::RmsNorm:
    return "rmsnorm";
  case PrologueKind::AddRmsNorm:
    return "add_rmsnorm";
  case PrologueKind::SiluMul:
    return "silu_mul";
  case PrologueKind::Smooth:
    return "smooth";
  case PrologueKind::Hadamard:
    return "hadamard";
  case PrologueKind::Map:
    return "map";
  }
  return "";
}

int64_t prologueInputWidth(std::span<const Prologue> chain, int64_t cols) {
  bool halves = !chain.empty() && chain.front().kind == PrologueKind::SiluMul;
  return halves ? 2 * cols : cols;
}

bool validatePrologueChain(std::span<const Prologue> chain, int64_t cols,
                           std::string *error) {
  if (chain.size() > kMaxPrologues)
    return fail(error, "the chain has " + std::to_string(chain.size()) +
                           " prologues, more than the limit of " +
                           std::to_string(kMaxPrologues));
  for (size_t index = 0; index < chain.size(); ++index) {
    const Prologue &prologue = chain[index];
    // Before printing it: printExpr recurses over the tree.
    if (prologue.kind == PrologueKind::Map &&
        exprDepth(prologue.expr) > kMaxExprDepth)
      return fail(error, "a map expression's tree is deeper than the limit "
                         "of " +
                             std::to_string(kMaxExprDepth) + " levels");
    std::string text = printPrologue(prologue);
    if (prologue.kind == PrologueKind::SiluMul && index != 0)
      return fail(error, "'" + text +
                             "' must come first: it reads the gate "
                             "and up halves of the kernel's input");
    if ((prologue.kind == PrologueKind::RmsNorm ||
         prologue.kind == PrologueKind::AddRmsNorm) &&
        !(std::isfinite(prologue.eps) && prologue.eps >= 0))
      return fail(error, "'" + text + "': eps must be finite and not negative");
    if (prologue.kind != PrologueKind::Hadamard)
      continue;
    if (cols == kDynamic)
      return fail(error, "'" + text +
                             "' needs a static column count "
                             "(rows=N cols=N): its blocks must "
                             "divide the row");
    int64_t block = prologue.block == 0 ? cols : prologue.block;
    if (prologue.block == 0 &&
        (!isPowerOfTwo(cols) || cols < kMinHadamardBlock ||
         cols > kMaxHadamardBlock))
      return fail(error, "'" + text +
                             "' needs a row width that is a power "
                             "of two from 16 to 4096, got " +
                             std::to_string(cols));
    if (cols % block != 0)
      return fail(error, "'" + text + "': the block " + std::to_string(block) +
                             " does not divide the row width " +
                             std::to_string(cols));
  }
  return true;
}

std::optional<Prologue> parsePrologue(std::string_view text,
                                      std::string *error) {
  Prologue prologue;
  std::string_view name = text, arguments;
  size_t open = text.find('(');
  if (open != std::string_view::npos) {
    name = text.substr(0, open);
    std::optional<std::string_view> inside = argumentsOf(text, open, error);
    if (!inside)
      return std::nullopt;
    arguments = *inside;
  }
  static const std::array<PrologueKind, 6> kinds = {
      PrologueKind::RmsNorm, PrologueKind::AddRmsNorm, PrologueKind::SiluMul,
      PrologueKind::Smooth,  PrologueKind::Hadamard,   PrologueKind::Map};
  auto kind = std::find_if(kinds.begin(), kinds.end(), [&](PrologueKind k) {
    return prologueName(k) == name;
  });
  if (kind == kinds.end()) {
    fail(error, "unknown prologue '" + std::string(name) +
                    "' (want rmsnorm, add_rmsnorm, silu_mul, smooth, "
                    "hadamard or map)");
    return std::nullopt;
  }
  prologue.kind = *kind;
  auto refuseArgument = [&](std::string why) {
    fail(error, "'" + std::string(text) + "': " + why);
    return std::nullopt;
  };
  switch (prologue.kind) {
  case PrologueKind::RmsNorm:
  case PrologueKind::AddRmsNorm:
    if (arguments.empty())
      break;
    if (!arguments.starts_with("eps="))
      return refuseArgument("bad argument '" + std::string(arguments) +
                            "' (want eps=NUMBER)");
    if (std::optional<float> eps = parseFloat(arguments.substr(4));
        eps && std::isfinite(*eps) && *eps >= 0)
      prologue.eps = *eps;
    else
      return refuseArgument("bad eps '" + std::string(arguments.substr(4)) +
                            "' (want a finite number >= 0)");
    break;
  case PrologueKind::SiluMul:
  case PrologueKind::Smooth:
    if (open != std::string_view::npos)
      return refuseArgument("'" + std::string(name) + "' takes no arguments");
    break;
  case PrologueKind::Hadamard: {
    if (arguments == "row")
      break;
    int64_t block = 0;
    auto [end, code] = std::from_chars(
        arguments.data(), arguments.data() + arguments.size(), block);
    if (arguments.empty() || code != std::errc() ||
        end != arguments.data() + arguments.size() || !isPowerOfTwo(block) ||
        block < kMinHadamardBlock || block > kMaxHadamardBlock)
      return refuseArgument("bad block '" + std::string(arguments) +
                            "' (want row or a power of two from 16 to 4096)");
    prologue.block = block;
    break;
  }
  case PrologueKind::Map: {
    if (arguments.empty())
      return refuseArgument("map needs an expression over x");
    std::optional<PrologueExpr> expr = ExprParser(arguments, error).parse();
    if (!expr)
      return std::nullopt;
    prologue.expr = std::move(*expr);
    prologue.exprText = printExpr(prologue.expr);
    break;
  }
  }
  return prologue;
}

bool takePrologueChain(std::string_view &text, std::vector<Prologue> &prologues,
                       std::string *error) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(')
      ++depth;
    if (text[i] == ')' && depth > 0)
      --depth;
    if (text[i] != '|' || depth != 0)
      continue;
    std::vector<std::string_view> tokens =
        splitSpecTokens(text.substr(start, i - start));
    if (tokens.size() != 1)
      return fail(error, tokens.empty()
                             ? "an empty prologue before '|' at column " +
                                   std::to_string(i + 1)
                             : "a prologue is one token, got '" +
                                   std::string(tokens[1]) + "' after '" +
                                   std::string(tokens[0]) + "'");
    // Refused before parsing the rest: a hostile spec may hold thousands.
    if (prologues.size() == kMaxPrologues)
      return fail(error, "more than " + std::to_string(kMaxPrologues) +
                             " prologues in the chain (the limit)");
    std::optional<Prologue> prologue = parsePrologue(tokens[0], error);
    if (!prologue)
      return false;
    prologues.push_back(std::move(*prologue));
    start = i + 1;
  }
  text = text.substr(start);
  return true;
}

std::string printPrologue(const Prologue &prologue) {
  std::string name(prologueName(prologue.kind));
  switch (prologue.kind) {
  case PrologueKind::RmsNorm:
  case PrologueKind::AddRmsNorm:
    return name + "(eps=" + printFloat(prologue.eps) + ")";
  case PrologueKind::SiluMul:
  case PrologueKind::Smooth:
    return name;
  case PrologueKind::Hadamard:
    return name + "(" +
           (prologue.block == 0 ? std::string("row")
                                : std::to_string(prologue.block)) +
           ")";
  case PrologueKind::Map:
    return name + "(" + printExpr(prologue.expr) + ")";
  }
  return name;
}

float prologueExp(float x) {
  // exp(x) = 2^n * p(r): n = rne(x * log2(e)), r = x - n * ln2_hi -
  // n * ln2_lo (ln2_hi has 12 significant bits, so n * ln2_hi is exact for
  // |n| < 2^12), p the degree-6 Taylor polynomial in Horner form, and 2^n
  // applied as two exact powers of two so that n may reach [-151, 129].
  if (std::isnan(x))
    return x;
  using C = PrologueExpConstants;
  x = std::min(std::max(x, C::kLowest), C::kHighest);
  float n = std::nearbyint(x * C::kLog2E);
  float r = x - n * C::kLn2High;
  r = r - n * C::kLn2Low;
  float p = C::kCoefficients[0];
  for (size_t index = 1; index < C::kCoefficients.size(); ++index)
    p = p * r + C::kCoefficients[index];
  int exponent = int(n);
  int first = exponent / 2, second = exponent - first;
  return p * bitsToFloat(uint32_t(first + 127) << 23) *
         bitsToFloat(uint32_t(second + 127) << 23);
}

float prologueSilu(float x) { return x / (1.0f + prologueExp(-x)); }

float evaluateExpr(const PrologueExpr &expr, float x) {
  using Op = PrologueExpr::Op;
  auto at = [&](size_t index) { return evaluateExpr(expr.operands[index], x); };
  switch (expr.op) {
  case Op::X:
    return x;
  case Op::Constant:
    return expr.value;
  case Op::Neg:
    return -at(0);
  case Op::Add:
    return at(0) + at(1);
  case Op::Sub:
    return at(0) - at(1);
  case Op::Mul:
    return at(0) * at(1);
  case Op::Div:
    return at(0) / at(1);
  case Op::Min:
  case Op::Max: {
    float a = at(0), b = at(1);
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<float>::quiet_NaN();
    // -0 < +0, as arith.minimumf / maximumf order them.
    if (a == b)
      return (expr.op == Op::Min) == std::signbit(a) ? a : b;
    return expr.op == Op::Min ? std::min(a, b) : std::max(a, b);
  }
  case Op::Abs:
    return std::fabs(at(0));
  case Op::Sqrt:
    return std::sqrt(at(0));
  case Op::Exp:
    return prologueExp(at(0));
  case Op::Silu:
    return prologueSilu(at(0));
  case Op::Sigmoid:
    return 1.0f / (1.0f + prologueExp(-at(0)));
  }
  return 0;
}

float hadamardScale(int64_t block) {
  return float(1.0 / std::sqrt(double(block)));
}

float roundToDtype(ValueDtype dtype, float value) {
  if (!dtype)
    return value;
  if (std::isnan(value))
    return value;
  return *dtype == HalfType::F16 ? halfToFloat(floatToHalf(value))
                                 : bfloat16ToFloat(floatToBFloat16(value));
}

std::optional<std::vector<float>>
applyPrologue(const Prologue &prologue, std::span<const float> values,
              int64_t rows, int64_t width, const PrologueOperands &operands,
              ValueDtype dtype, std::vector<float> *residualOut,
              std::string *error) {
  if (!checkSize(values, size_t(rows * width), "the input", error))
    return std::nullopt;
  int64_t cols = prologue.kind == PrologueKind::SiluMul ? width / 2 : width;
  if (prologue.kind == PrologueKind::SiluMul && width % 2 != 0) {
    fail(error,
         "silu_mul needs an even input width, got " + std::to_string(width));
    return std::nullopt;
  }
  Prologue single = prologue;
  if (!validatePrologueChain({&single, 1}, cols, error))
    return std::nullopt;
  std::vector<float> output(size_t(rows * cols));
  switch (prologue.kind) {
  case PrologueKind::RmsNorm:
    if (!checkSize(operands.weight, size_t(cols), "the weight", error))
      return std::nullopt;
    rmsNormRows(values, rows, cols, operands.weight, prologue.eps, output);
    break;
  case PrologueKind::AddRmsNorm: {
    if (!checkSize(operands.weight, size_t(cols), "the weight", error) ||
        !checkSize(operands.residual, size_t(rows * cols), "the residual",
                   error))
      return std::nullopt;
    std::vector<float> sum(values.size());
    for (size_t index = 0; index < sum.size(); ++index)
      sum[index] =
          roundToDtype(dtype, values[index] + operands.residual[index]);
    rmsNormRows(sum, rows, cols, operands.weight, prologue.eps, output);
    if (residualOut)
      *residualOut = std::move(sum);
    break;
  }
  case PrologueKind::SiluMul:
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < cols; ++col) {
        float gate = values[size_t(row * width + col)];
        float up = values[size_t(row * width + cols + col)];
        output[size_t(row * cols + col)] = prologueSilu(gate) * up;
      }
    break;
  case PrologueKind::Smooth:
    if (!checkSize(operands.smooth, size_t(cols), "the smoothing vector",
                   error))
      return std::nullopt;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < cols; ++col)
        output[size_t(row * cols + col)] =
            values[size_t(row * cols + col)] / operands.smooth[col];
    break;
  case PrologueKind::Hadamard: {
    int64_t block = prologue.block == 0 ? cols : prologue.block;
    float scale = hadamardScale(block);
    std::copy(values.begin(), values.end(), output.begin());
    for (int64_t start = 0; start < rows * cols; start += block) {
      std::span<float> chunk(output.data() + start, size_t(block));
      walshHadamard(chunk);
      for (float &value : chunk)
        value = value * scale;
    }
    break;
  }
  case PrologueKind::Map:
    for (size_t index = 0; index < output.size(); ++index)
      output[index] = evaluateExpr(prologue.expr, values[index]);
    break;
  }
  return output;
}

std::optional<QuantizedTensor>
quantizeFused(const Scheme &scheme, std::span<const Prologue> chain,
              std::span<const PrologueOperands> operands,
              std::span<const float> input, int64_t rows, int64_t cols,
              ValueDtype dtype, const StaticScales &given,
              std::vector<float> *residualOut, std::string *error) {
  if (operands.size() != chain.size()) {
    fail(error, "the chain has " + std::to_string(chain.size()) +
                    " prologues but " + std::to_string(operands.size()) +
                    " operand sets");
    return std::nullopt;
  }
  if (!validatePrologueChain(chain, cols, error))
    return std::nullopt;
  int64_t width = prologueInputWidth(chain, cols);
  std::vector<float> values(input.begin(), input.end());
  for (size_t index = 0; index < chain.size(); ++index) {
    std::optional<std::vector<float>> next =
        applyPrologue(chain[index], values, rows, width, operands[index], dtype,
                      residualOut, error);
    if (!next)
      return std::nullopt;
    values = std::move(*next);
    width = cols;
  }
  return quantize(scheme, values, rows, cols, given, error);
}

} // namespace lowbit
