//===- WeightSchemes.h - The weight schemes lowbit's matmul shows -*- C++ -*-===//
//
// The weight schemes of issue 27 (docs/matmul.md's table), each a label and
// its scheme text: the named ones, the spellings of the others (int4
// symmetric, per-channel int8 and fp8, NVFP4's encode convention) and a
// user scheme. `lowbit eval --matmul`, `lowbit demo` and the tests walk
// this one list.
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

} // namespace lowbit::matmul

#endif // LOWBIT_MATMUL_WEIGHTSCHEMES_H
