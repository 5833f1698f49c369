//===- PrologueLimits.h - Bounds on prologue specs --------------*- C++ -*-===//
//
// Limits on what a prologue spec may ask for, so that no input can exhaust
// the stack or take unbounded time (docs/fusion.md lists them). A header of
// its own: only the parser, the validator and the tests need the numbers.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FORMAT_PROLOGUELIMITS_H
#define LOWBIT_FORMAT_PROLOGUELIMITS_H

#include <cstddef>

namespace lowbit {

/// A `map(...)` expression's tree: at most kMaxExprDepth deep (a leaf is
/// one level, and each operator, unary '-' and call adds one: `x+x+x` is
/// three deep) and at most kMaxExprNodes nodes. The parser, the printer,
/// the evaluator and the lowering each recurse over the tree.
constexpr int kMaxExprDepth = 128;
constexpr size_t kMaxExprNodes = 1024;
/// The parser's own recursion: parentheses, unary '-' and calls open at
/// once. Twice the depth, so that the canonical text of any tree within
/// the limits, which parenthesizes every operation (`(-x)` is two
/// levels), parses back.
constexpr int kMaxExprNesting = 2 * kMaxExprDepth;
/// The text, checked before it is parsed; far above the canonical text of
/// any tree within the limits (a node prints in at most ~20 characters).
constexpr size_t kMaxExprLength = 65536;

/// The most prologues in one chain. A chain is one fused kernel, and every
/// prologue adds a stage to its body: a hostile spec of thousands used to
/// take minutes and gigabytes to compile.
constexpr size_t kMaxPrologues = 64;

} // namespace lowbit

#endif // LOWBIT_FORMAT_PROLOGUELIMITS_H
