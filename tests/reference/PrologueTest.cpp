//===- PrologueTest.cpp - Hand-computed cases of the reference prologues --===//
//
// The expected values are worked out by hand from docs/fusion.md (the
// working is in the comments), chosen so that the f32 arithmetic is exact
// or so that the documented order gives a different answer than another
// order would.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include "format/Prologue.h"
#include "format/PrologueLimits.h"

#include <cmath>

using namespace lowbit;
using namespace lowbit::test;

namespace {

Prologue parseOrFail(const char *text) {
  std::string error;
  std::optional<Prologue> prologue = parsePrologue(text, &error);
  INFO(text << ": " << error);
  REQUIRE(prologue);
  return *prologue;
}

std::string parseError(const char *text) {
  std::string error;
  CHECK_FALSE(parsePrologue(text, &error));
  return error;
}

std::vector<float> applyOrFail(const Prologue &prologue,
                               const std::vector<float> &values, int64_t rows,
                               int64_t width,
                               const PrologueOperands &operands = {},
                               ValueDtype dtype = std::nullopt,
                               std::vector<float> *residual = nullptr) {
  std::string error;
  std::optional<std::vector<float>> result = applyPrologue(
      prologue, values, rows, width, operands, dtype, residual, &error);
  INFO(error);
  REQUIRE(result);
  return *result;
}

} // namespace

TEST_CASE("rmsnorm: x / rms(x) * weight", "[prologue]") {
  // Row of 2s: sum 16, mean 4, eps 0, sqrt 2, factor 0.5; the weight then
  // scales each column. Second row: ones, eps 3: 1 + 3 = 4, factor 0.5.
  Prologue rms = parseOrFail("rmsnorm(eps=0)");
  std::vector<float> weight = {1, 2, 0.5f, -1};
  CHECK(applyOrFail(rms, {2, 2, 2, 2}, 1, 4,
                    {.weight = weight, .residual = {}, .smooth = {}}) ==
        std::vector<float>{1, 2, 0.5f, -1});
  Prologue withEps = parseOrFail("rmsnorm(eps=3)");
  CHECK(applyOrFail(withEps, {1, 1, 1, 1, 2, 2, 2, 2}, 2, 4,
                    {.weight = weight, .residual = {}, .smooth = {}}) ==
        std::vector<float>{0.5f, 1, 0.25f, -0.5f, 2.0f / std::sqrt(7.0f),
                           4.0f / std::sqrt(7.0f), 1.0f / std::sqrt(7.0f),
                           -2.0f / std::sqrt(7.0f)});
}

TEST_CASE("rmsnorm: the row sum runs in 32 strided partials and a tree",
          "[prologue]") {
  // 65 columns: x0 = 4096 (square 2^24), every other x = 1. Partial 0 adds
  // columns 0, 32, 64: 2^24 + 1 ties to 2^24 twice, so it stays 2^24; the
  // other 31 partials are 2 (columns i, i + 32) and the tree adds them
  // exactly: 62, then 2^24 + 62. Left to right would give 2^24 (every +1 a
  // tie to even), a different factor.
  std::vector<float> row(65, 1.0f);
  row[0] = 4096;
  std::vector<float> weight(65, 1.0f);
  std::vector<float> out =
      applyOrFail(parseOrFail("rmsnorm(eps=0)"), row, 1, 65,
                  {.weight = weight, .residual = {}, .smooth = {}});
  float factor = 1.0f / std::sqrt(16777278.0f / 65.0f);
  CHECK(out[1] == factor);
  CHECK(out[0] == 4096.0f * factor);
  CHECK(out[1] != 1.0f / std::sqrt(16777216.0f / 65.0f));
}

TEST_CASE("add_rmsnorm: the residual is the rounded sum", "[prologue]") {
  // f32: 1 + 1 = 2, row of 2s -> factor 0.5 -> y = 1.
  Prologue prologue = parseOrFail("add_rmsnorm(eps=0)");
  std::vector<float> weight = {1, 1}, residualIn = {1, 1};
  std::vector<float> residual;
  CHECK(applyOrFail(prologue, {1, 1}, 1, 2,
                    {.weight = weight, .residual = residualIn, .smooth = {}},
                    std::nullopt, &residual) == std::vector<float>{1, 1});
  CHECK(residual == std::vector<float>{2, 2});
  // bf16: 1 + 2^-9 rounds to 1 (bf16 keeps 7 fraction bits), f16 keeps it;
  // the norm then sees the stored residual.
  std::vector<float> tiny = {0x1p-9f, 0x1p-9f};
  applyOrFail(prologue, {1, 1}, 1, 2,
              {.weight = weight, .residual = tiny, .smooth = {}},
              HalfType::BF16, &residual);
  CHECK(residual == std::vector<float>{1, 1});
  applyOrFail(prologue, {1, 1}, 1, 2,
              {.weight = weight, .residual = tiny, .smooth = {}}, HalfType::F16,
              &residual);
  CHECK(residual == std::vector<float>{1 + 0x1p-9f, 1 + 0x1p-9f});
}

TEST_CASE("silu_mul: silu(gate) * up over the two halves", "[prologue]") {
  // Width 4 -> 2 columns. exp(0) = 1 exactly (the polynomial at r = 0), so
  // silu(0) = 0 / 2 = 0; gate 0 with up 5 gives 0. +inf: exp(-inf) clamps
  // to exp(-104), far below the smallest subnormal, so silu(inf) = inf.
  Prologue prologue = parseOrFail("silu_mul");
  CHECK(prologueExp(0) == 1.0f);
  std::vector<float> out = applyOrFail(prologue, {0, INFINITY, 5, 2}, 1, 4);
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == INFINITY);
  // silu(2) * 3 = 2 / (1 + e^-2) * 3 = 5.28478...
  out = applyOrFail(prologue, {2, 1, 3, 1}, 1, 4);
  CHECK(out[0] == Approx(5.2847824).epsilon(1e-6));
  std::string error;
  std::vector<float> odd = {1, 2, 3};
  CHECK_FALSE(
      applyPrologue(prologue, odd, 1, 3, {}, std::nullopt, nullptr, &error));
  CHECK(error == "silu_mul needs an even input width, got 3");
}

TEST_CASE("prologueExp: within 2 ulp of exp, inf and 0 at the ends",
          "[prologue]") {
  for (float x = -87.0f; x < 88.0f; x += 0.37f) {
    float got = prologueExp(x), want = std::exp(x);
    INFO(x);
    CHECK(std::fabs(got - want) <= 2 * (std::nextafter(want, INFINITY) - want));
  }
  CHECK(prologueExp(89.0f) == INFINITY);
  CHECK(prologueExp(-INFINITY) == 0.0f);
  CHECK(std::isnan(prologueExp(NAN)));
}

TEST_CASE("smooth: x / s per channel", "[prologue]") {
  std::vector<float> smooth = {4, 3};
  CHECK(applyOrFail(parseOrFail("smooth"), {2, 9, -1, 1.5f}, 2, 2,
                    {.weight = {}, .residual = {}, .smooth = smooth}) ==
        std::vector<float>{0.5f, 3, -0.25f, 0.5f});
}

TEST_CASE("hadamard: Sylvester order, normalized by 1/sqrt(B)", "[prologue]") {
  // e_0 maps to the first column of H (all ones) times 1/4; e_1 to the
  // second, (-1)^j; a row of ones to 16 e_0 / 4. Two rows, two blocks of 16.
  std::vector<float> rows(64, 0.0f);
  rows[0] = 1;  // row 0 block 0: e_0
  rows[17] = 1; // row 0 block 1: e_1
  for (int col = 32; col < 48; ++col)
    rows[col] = 1; // row 1 block 0: ones
  std::vector<float> out =
      applyOrFail(parseOrFail("hadamard(16)"), rows, 2, 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(out[j] == 0.25f);
    CHECK(out[16 + j] == (j % 2 ? -0.25f : 0.25f));
    CHECK(out[32 + j] == (j == 0 ? 4.0f : 0.0f));
    CHECK(out[48 + j] == 0.0f);
  }
  // Block 32: 1/sqrt(32) rounded once to f32.
  CHECK(hadamardScale(32) == 0.176776695f);
  std::vector<float> e0(32, 0.0f);
  e0[0] = 3;
  CHECK(applyOrFail(parseOrFail("hadamard(row)"), e0, 1, 32)[31] ==
        3.0f * hadamardScale(32));
  std::string error;
  Prologue block16 = parseOrFail("hadamard(16)");
  CHECK_FALSE(validatePrologueChain({&block16, 1}, 40, &error));
  CHECK(error.find("does not divide the row width 40") != std::string::npos);
  Prologue row = parseOrFail("hadamard(row)");
  CHECK_FALSE(validatePrologueChain({&row, 1}, 48, &error));
  CHECK(error.find("power of two from 16 to 4096, got 48") !=
        std::string::npos);
  CHECK_FALSE(validatePrologueChain({&block16, 1}, kDynamic, &error));
  CHECK(error.find("needs a static column count") != std::string::npos);
}

TEST_CASE("map: an elementwise expression in f32", "[prologue]") {
  // x * 0.5 + 1: 2 -> 2, -4 -> -1; precedence and unary minus.
  CHECK(applyOrFail(parseOrFail("map(x * 0.5 + 1)"), {2, -4}, 1, 2) ==
        std::vector<float>{2, -1});
  CHECK(applyOrFail(parseOrFail("map(1 + 2 * -x)"), {3}, 1, 1) ==
        std::vector<float>{-5});
  CHECK(applyOrFail(parseOrFail("map((1 + 2) * x / 4)"), {2}, 1, 1) ==
        std::vector<float>{1.5f});
  // max(x, 0) keeps +0 over -0 and propagates NaN; abs, sqrt.
  std::vector<float> out =
      applyOrFail(parseOrFail("map(max(x, 0))"), {-0.0f, NAN, -3, 2}, 1, 4);
  CHECK(!std::signbit(out[0]));
  CHECK(std::isnan(out[1]));
  CHECK(out[2] == 0);
  CHECK(out[3] == 2);
  CHECK(applyOrFail(parseOrFail("map(sqrt(abs(x)))"), {-16}, 1, 1) ==
        std::vector<float>{4});
  CHECK(printPrologue(parseOrFail("map(x*0.5+1)")) == "map(((x*0.5)+1))");
}

TEST_CASE("prologue text: canonical print reads back, errors name the token",
          "[prologue]") {
  for (const char *text :
       {"rmsnorm(eps=1e-05)", "add_rmsnorm(eps=1e-06)", "silu_mul", "smooth",
        "hadamard(128)", "hadamard(row)", "map((x*2))"})
    CHECK(printPrologue(parseOrFail(text)) == text);
  CHECK(printPrologue(parseOrFail("rmsnorm")) == "rmsnorm(eps=1e-06)");
  CHECK(parseError("layernorm").find("unknown prologue 'layernorm'") !=
        std::string::npos);
  CHECK(parseError("rmsnorm(eps=abc)").find("bad eps 'abc'") !=
        std::string::npos);
  CHECK(parseError("rmsnorm(eps=-1)").find("bad eps '-1'") !=
        std::string::npos);
  CHECK(parseError("rmsnorm(epsilon=1)").find("bad argument 'epsilon=1'") !=
        std::string::npos);
  CHECK(parseError("hadamard(100)").find("bad block '100'") !=
        std::string::npos);
  CHECK(parseError("hadamard(8192)").find("bad block '8192'") !=
        std::string::npos);
  CHECK(parseError("silu_mul(2)").find("takes no arguments") !=
        std::string::npos);
  CHECK(parseError("map(y + 1)").find("unknown name 'y'") != std::string::npos);
  CHECK(parseError("map(x +)").find("expected an operand") !=
        std::string::npos);
  CHECK(parseError("map(x ) 2)").find("unexpected ') 2'") != std::string::npos);
  CHECK(parseError("map(min(x))").find("takes two arguments") !=
        std::string::npos);
}

TEST_CASE("quantizeFused: the chain, then the reference quantizer",
          "[prologue]") {
  // smooth then rmsnorm: [8, 8] / [2, 2] = [4, 4]; mean square 16, factor
  // 1/4 -> [1, 1]; fp8_e4m3 per tensor: amax 1, scale 1/448, 1 -> 448.
  std::vector<Prologue> chain = {parseOrFail("smooth"),
                                 parseOrFail("rmsnorm(eps=0)")};
  std::vector<float> smooth = {2, 2}, weight = {1, 1};
  std::vector<PrologueOperands> operands = {
      {.weight = {}, .residual = {}, .smooth = smooth},
      {.weight = weight, .residual = {}, .smooth = {}}};
  std::vector<float> input = {8, 8};
  std::string error;
  std::optional<QuantizedTensor> tensor =
      quantizeFused(named("fp8_e4m3"), chain, operands, input, 1, 2,
                    std::nullopt, {}, nullptr, &error);
  INFO(error);
  REQUIRE(tensor);
  CHECK(tensor->codes == std::vector<uint8_t>{0x7E, 0x7E});
  CHECK(decodeScale(ScaleType::F32, tensor->scaleCodes[0]) == 1.0f / 448);
  // silu_mul anywhere but first is refused.
  std::vector<Prologue> late = {parseOrFail("smooth"), parseOrFail("silu_mul")};
  CHECK_FALSE(validatePrologueChain(late, 2, &error));
  CHECK(error.find("'silu_mul' must come first") != std::string::npos);
}

TEST_CASE("map: deep and long expressions are refused, not a stack overflow",
          "[prologue]") {
  auto nested = [](const std::string &open, size_t levels,
                   const std::string &close) {
    std::string text;
    for (size_t level = 0; level < levels; ++level)
      text += open;
    text += "x";
    for (size_t level = 0; level < levels; ++level)
      text += close;
    return "map(" + text + ")";
  };
  auto chain = [](const std::string &link, size_t links) {
    std::string text = "x";
    for (size_t index = 0; index < links; ++index)
      text += link;
    return "map(" + text + ")";
  };
  // Deep enough to overflow an 8 MiB stack in a recursive parser; each
  // used to crash with SIGSEGV.
  for (const std::string &hostile :
       {nested("(", 100000, ")"), nested("-", 100000, ""),
        nested("abs(", 100000, ")"), chain("+x", 100000)})
    CHECK(parseError(hostile.c_str()).find("more than the limit of 65536") !=
          std::string::npos);
  // Under the length limit, past the parser's nesting limit.
  for (const std::string &deep : {nested("(", kMaxExprNesting + 1, ")"),
                                  nested("-(", kMaxExprNesting / 2 + 1, ")")})
    CHECK(parseError(deep.c_str())
              .find("nests deeper than the limit of 256 levels") !=
          std::string::npos);
  // Past the tree's depth: each kind of level.
  for (const std::string &deep :
       {nested("-", kMaxExprDepth, ""), nested("sqrt(", kMaxExprDepth, ")"),
        chain("+x", kMaxExprDepth), chain("*2", kMaxExprDepth),
        chain("-1", kMaxExprDepth)})
    CHECK(parseError(deep.c_str())
              .find("tree is deeper than the limit of 128 levels") !=
          std::string::npos);
  // Past the node count, within the depth: 20 sums of 100 terms.
  std::string sum = "(x";
  for (int term = 1; term < 100; ++term)
    sum += "+x";
  sum += ")";
  std::string wide = sum;
  for (int index = 1; index < 20; ++index)
    wide += "+" + sum;
  CHECK(parseError(("map(" + wide + ")").c_str())
            .find("more than the limit of 1024 operands and operations") !=
        std::string::npos);

  // At the limits: parsed, evaluated, and the canonical text (which
  // parenthesizes every operation) parses back equal.
  Prologue parens = parseOrFail(nested("(", kMaxExprNesting, ")").c_str());
  CHECK(applyOrFail(parens, {3}, 1, 1) == std::vector<float>{3});
  Prologue sumChain = parseOrFail(chain("+1", kMaxExprDepth - 1).c_str());
  CHECK(applyOrFail(sumChain, {0}, 1, 1) == std::vector<float>{127});
  Prologue negations = parseOrFail(nested("-", kMaxExprDepth - 1, "").c_str());
  CHECK(applyOrFail(negations, {2}, 1, 1) == std::vector<float>{-2});
  for (const Prologue *deepest : {&sumChain, &negations}) {
    std::string printed = printPrologue(*deepest);
    CHECK(parseOrFail(printed.c_str()) == *deepest);
  }
}

TEST_CASE("map: a tree built in C++ deeper than the limit is refused",
          "[prologue]") {
  Prologue prologue;
  prologue.kind = PrologueKind::Map;
  PrologueExpr *leaf = &prologue.expr;
  for (int level = 0; level < 4 * kMaxExprDepth; ++level) {
    leaf->op = PrologueExpr::Op::Neg;
    leaf->operands.resize(1);
    leaf = &leaf->operands[0];
  }
  std::string error;
  CHECK_FALSE(validatePrologueChain({&prologue, 1}, 4, &error));
  CHECK(error.find("tree is deeper than the limit of 128") !=
        std::string::npos);
}

TEST_CASE("a prologue chain holds at most kMaxPrologues", "[prologue]") {
  std::vector<Prologue> chain(kMaxPrologues, parseOrFail("map(x*0.5)"));
  std::string error;
  CHECK(validatePrologueChain(chain, 16, &error));
  chain.push_back(chain.back());
  CHECK_FALSE(validatePrologueChain(chain, 16, &error));
  CHECK(error.find("65 prologues, more than the limit of 64") !=
        std::string::npos);
}
