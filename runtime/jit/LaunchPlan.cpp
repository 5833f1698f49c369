//===- LaunchPlan.cpp - One-shot helpers over the launch module -----------===//
//
// The plan's syntax, compiler and evaluator are runtime/aot/LaunchProgram;
// these helpers compile and evaluate in one call for callers that launch a
// step once (the GPU emulator, the report).
//
//===----------------------------------------------------------------------===//

#include "runtime/jit/LaunchPlan.h"

#include <memory>

namespace lowbit::jit {

Expected<int64_t> evaluateSize(std::string_view expression,
                               const ParamShapes &shapes) {
  Expected<launch::Expression> compiled =
      launch::Expression::compile(expression, shapes.size());
  if (!compiled)
    return std::move(compiled).takeError();
  return compiled->evaluate(shapes);
}

Expected<ResolvedLaunch> resolveLaunch(const LaunchStep &step,
                                       const ParamShapes &shapes,
                                       std::span<const uint64_t> buffers,
                                       uint64_t workspace,
                                       int64_t workspaceWords) {
  Expected<launch::CompiledStep> compiled =
      launch::compileStep(step, shapes.size(), workspaceWords);
  if (!compiled)
    return std::move(compiled).takeError();
  // Too large for the stack of an emulated caller's fiber.
  auto resolved = std::make_unique<launch::ResolvedStep>();
  if (Status status = launch::resolveStep(*compiled, shapes, buffers, workspace,
                                          workspaceWords, *resolved);
      !status)
    return std::move(status).takeError();
  ResolvedLaunch result;
  result.sizes = resolved->sizes;
  result.values.assign(resolved->slots.begin(),
                       resolved->slots.begin() + resolved->slotCount);
  return result;
}

} // namespace lowbit::jit
