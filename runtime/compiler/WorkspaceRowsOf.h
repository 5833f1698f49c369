//===- WorkspaceRowsOf.h - A lowered module's per-row workspace -*- C++ -*-===//
//
// The part of a module's workspace that grows with X's rows
// (target/WorkspaceRows.h; docs/kernel-abi.md, "Workspace"), read off the
// @kernel argument's lowbit.workspace_rows attribute after the family's
// loops lowering or the GPU tail, as workspaceWordsOf reads the fixed
// words (GpuCompile.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_WORKSPACEROWSOF_H
#define LOWBIT_RUNTIME_COMPILER_WORKSPACEROWSOF_H

#include "target/WorkspaceRows.h"

#include "mlir/IR/BuiltinOps.h"

namespace lowbit::compiler {

/// None for a fixed-size workspace or none at all.
workspace_abi::RowWords workspaceRowsOf(mlir::ModuleOp module);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_WORKSPACEROWSOF_H
