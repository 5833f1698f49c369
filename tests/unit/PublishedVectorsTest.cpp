//===- PublishedVectorsTest.cpp - Hand-written facts from the specs -------===//
//
// tests/data/published_vectors.txt holds conversion facts copied by hand
// from the OCP FP8/MX specs, the PTX ISA and NVIDIA's headers (not made by
// ml_dtypes). Each line is checked against lowbit and against the oracle.
//
//===----------------------------------------------------------------------===//

#include "Oracle.h"
#include "TestVectors.h"

#include "format/Codec.h"
#include "format/Format.h"
#include "format/Scheme.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace testvectors;

namespace {

double parseValue(const std::string &text) {
  if (text == "nan")
    return std::nan("");
  if (text == "inf")
    return INFINITY;
  if (text == "-inf")
    return -INFINITY;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  REQUIRE(*end == '\0');
  return value;
}

bool sameValue(double got, double want) {
  if (std::isnan(want))
    return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

} // namespace

TEST_CASE("published vectors", "[format][published]") {
  std::ifstream in(dataPath("published_vectors.txt"));
  REQUIRE(in);
  Tally model("published-vectors lowbit");
  Tally reference("published-vectors oracle");
  std::string line;
  int lineNumber = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields(line);
    std::string kind, formatName;
    fields >> kind >> formatName;
    INFO("published_vectors.txt:" << lineNumber << ": " << line);
    std::optional<lowbit::Format> format = lowbit::lookupFormat(formatName);
    REQUIRE(format.has_value());
    oracle::Oracle oracle(*oracle::namedSpec(formatName));
    std::string where = "line " + std::to_string(lineNumber) + " '" + line + "'";

    if (kind == "encode") {
      std::string mode, inputText, expectedText;
      fields >> mode >> inputText >> expectedText;
      REQUIRE((mode == "sat" || mode == "nonsat"));
      float input = float(parseValue(inputText));
      REQUIRE((std::isnan(input) || double(input) == parseValue(inputText) ||
               inputText.find('.') != std::string::npos));
      double expected = parseValue(expectedText);
      lowbit::EncodeOptions options;
      options.saturate = mode == "sat";
      uint32_t code = lowbit::encode(*format, input, options);
      double got = format->decode(code);
      model.check(sameValue(got, expected),
                  where + ": got code " + hex(code));
      uint32_t oracleCode = oracle.encode(input, options.saturate);
      reference.check(sameValue(oracle.decode(oracleCode), expected),
                      where + ": oracle code " + hex(oracleCode));
    } else if (kind == "decode") {
      std::string codeText, expectedText;
      fields >> codeText >> expectedText;
      uint32_t code = uint32_t(std::stoul(codeText, nullptr, 0));
      double expected = parseValue(expectedText);
      model.check(sameValue(format->decode(code), expected), where);
      reference.check(sameValue(oracle.decode(code), expected), where);
    } else if (kind == "emax") {
      int expected;
      fields >> expected;
      model.check(lowbit::elementEmax(*format) == expected, where);
      reference.check(int(std::floor(std::log2(oracle.maxValue()))) == expected,
                      where);
    } else if (kind == "mxscale") {
      std::string rule;
      double amax;
      int expected;
      fields >> rule >> amax >> expected;
      // Scale-rule arithmetic belongs to the scheme layer; here the oracle's
      // formulas are checked against the published examples, and the
      // element max they use against the model.
      int k = rule == "floor" ? oracle::mxFloorExponent(amax, oracle.maxValue())
                              : oracle::mxRceilExponent(amax, oracle.maxValue());
      reference.check(k == expected, where);
      model.check(format->maxValue() == oracle.maxValue(), where);
    } else {
      FAIL("unknown line kind: " << line);
    }
  }
  REQUIRE(model.checked > 50);
  CHECK(model.report() == 0);
  CHECK(reference.report() == 0);
}
