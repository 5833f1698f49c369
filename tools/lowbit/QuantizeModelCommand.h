//===- QuantizeModelCommand.h - `lowbit quantize-model` ---------*- C++ -*-===//
//
// Apart from Commands.h, which most of the compiler library's sources
// include: a front-end command of its own needs no rebuild of them.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_QUANTIZEMODELCOMMAND_H
#define LOWBIT_TOOLS_LOWBIT_QUANTIZEMODELCOMMAND_H

#include "tools/lowbit/Commands.h"

namespace lowbit::cli {

/// `lowbit quantize-model`: a checkpoint quantized into compressed-tensors.
CommandResult runQuantizeModel(Arguments args);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_QUANTIZEMODELCOMMAND_H
