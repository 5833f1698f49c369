//===- TestTarget.h - A target the test names, parsed -----------*- C++ -*-===//
//
// Header-only (Catch2 and lowering/Target.h), so test binaries that link
// none of GpuTestSupport.cpp can share it.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_GPU_TESTTARGET_H
#define LOWBIT_TESTS_GPU_TESTTARGET_H

#include "target/Target.h"

#include <catch2/catch.hpp>

#include <optional>
#include <string>

namespace lowbit::test {

/// The target `text` names; the test stops with the parser's message if
/// it names none.
inline Target targetOf(const std::string &text) {
  std::string error;
  std::optional<Target> target = parseTarget(text, &error);
  INFO(error);
  REQUIRE(target);
  return *target;
}

} // namespace lowbit::test

#endif // LOWBIT_TESTS_GPU_TESTTARGET_H
