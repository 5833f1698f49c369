//===- WeightSchemes.h - The weight schemes lowbit's matmul shows -*- C++ -*-===//
//
// The weight schemes of issue 27 (docs/matmul.md's table), each a label and
// its scheme text: the named ones, the spellings of the others (int4
// symmetric, per-channel int8 and fp8, NVFP4's encode convention) and a
// user scheme. `lowbit eval --matmul`, `lowbit demo` and the tests walk
// this one list, and the quantized-activation pairs of issue 28 likewise.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_MATMUL_WEIGHTSCHEMES_H
#define LOWBIT_MATMUL_WEIGHTSCHEMES_H

#include <vector>

namespace lowbit::matmul {

struct WeightSchemeEntry {
  const char *label;
  const char *text; ///< a named scheme or the compact scheme(...) form
};

const std::vector<WeightSchemeEntry> &weightSchemeEntries();

/// A weight and an activation scheme that meet in one quantized product
/// (issue 28: W8A8 and W4A4), with a label.
struct ActivationPairEntry {
  const char *label;
  const char *weights;     ///< w=
  const char *activations; ///< a=
};

/// The quantized-activation combinations lowbit's matmul shows: fp8 x fp8
/// per tensor, per token x per channel and 1x128 x 128x128; int8 x int8
/// per token x per channel; nvfp4 x nvfp4; mxfp4 x mxfp4.
const std::vector<ActivationPairEntry> &activationPairEntries();

} // namespace lowbit::matmul

#endif // LOWBIT_MATMUL_WEIGHTSCHEMES_H
