//===- LaunchProgram.cpp - Launch plans: text, compile, resolve -----------===//

#include "runtime/aot/LaunchProgram.h"

#include "target/KernelAbi.h"
#include "target/Workspace.h"

#include <charconv>
#include <limits>

namespace lowbit::launch {

enum class Expression::Op : uint8_t {
  Constant,
  Dim, // operand: param * 2 + dim
  Add,
  Sub,
  Mul,
  DivS,
  DivU,
  CeilDivS,
  CeilDivU,
  FloorDivS,
  RemS,
  RemU,
  MaxS,
  MinS,
  MaxU,
  MinU,
  Cmp, // operand: arith.cmpi predicate
  Select,
};

namespace {

using Op = Expression::Op;

/// The expression stack of an evaluation lives on the C++ stack.
constexpr size_t kMaxStack = 64;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos)
      return parts;
    start = end + 1;
  }
}

bool parseInteger(std::string_view text, int64_t &value) {
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

bool parseIndex(std::string_view text, size_t &value) {
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

struct NamedOp {
  std::string_view name;
  Op op;
};
constexpr NamedOp kBinaryOps[] = {
    {"add", Op::Add},           {"sub", Op::Sub},
    {"mul", Op::Mul},           {"divs", Op::DivS},
    {"divu", Op::DivU},         {"ceildivs", Op::CeilDivS},
    {"ceildivu", Op::CeilDivU}, {"floordivs", Op::FloorDivS},
    {"rems", Op::RemS},         {"remu", Op::RemU},
    {"maxs", Op::MaxS},         {"mins", Op::MinS},
    {"maxu", Op::MaxU},         {"minu", Op::MinU},
};

/// A binary operator (or cmp) on two values; `why` says what went wrong
/// (division by zero, INT64_MIN / -1).
int64_t applyBinary(const Expression::Instruction &instruction, int64_t lhs,
                    int64_t rhs, const char *&why) {
  uint64_t ul = uint64_t(lhs), ur = uint64_t(rhs);
  bool divides = instruction.op >= Op::DivS && instruction.op <= Op::RemU;
  if (divides && rhs == 0) {
    why = "division by zero";
    return 0;
  }
  bool isSigned = instruction.op == Op::DivS ||
                  instruction.op == Op::CeilDivS ||
                  instruction.op == Op::FloorDivS || instruction.op == Op::RemS;
  // INT64_MIN / -1 overflows (undefined in C++, poison in arith).
  if (isSigned && lhs == std::numeric_limits<int64_t>::min() && rhs == -1) {
    why = "signed overflow in a division";
    return 0;
  }
  int64_t result = 0;
  switch (instruction.op) {
  case Op::Add:
    result = int64_t(ul + ur);
    break;
  case Op::Sub:
    result = int64_t(ul - ur);
    break;
  case Op::Mul:
    result = int64_t(ul * ur);
    break;
  case Op::DivS:
    result = lhs / rhs;
    break;
  case Op::DivU:
    result = int64_t(ul / ur);
    break;
  case Op::CeilDivS:
    result = lhs / rhs + ((lhs % rhs != 0 && (lhs < 0) == (rhs < 0)) ? 1 : 0);
    break;
  case Op::CeilDivU:
    result = int64_t(ul / ur + (ul % ur != 0 ? 1 : 0));
    break;
  case Op::FloorDivS:
    result = lhs / rhs - ((lhs % rhs != 0 && (lhs < 0) != (rhs < 0)) ? 1 : 0);
    break;
  case Op::RemS:
    result = lhs % rhs;
    break;
  case Op::RemU:
    result = int64_t(ul % ur);
    break;
  case Op::MaxS:
    result = std::max(lhs, rhs);
    break;
  case Op::MinS:
    result = std::min(lhs, rhs);
    break;
  case Op::MaxU:
    result = int64_t(std::max(ul, ur));
    break;
  case Op::MinU:
    result = int64_t(std::min(ul, ur));
    break;
  case Op::Cmp:
    switch (instruction.operand) {
    case 0:
      result = lhs == rhs;
      break;
    case 1:
      result = lhs != rhs;
      break;
    case 2:
      result = lhs < rhs;
      break;
    case 3:
      result = lhs <= rhs;
      break;
    case 4:
      result = lhs > rhs;
      break;
    case 5:
      result = lhs >= rhs;
      break;
    case 6:
      result = ul < ur;
      break;
    case 7:
      result = ul <= ur;
      break;
    case 8:
      result = ul > ur;
      break;
    default:
      result = ul >= ur;
      break;
    }
    break;
  default:
    why = "corrupt program";
    return 0;
  }
  return result;
}

/// Folds the instruction just appended when all its operands are
/// constants (the GPU tail leaves `(mul 0 -1)` and the like), so that a
/// launch evaluates only what depends on the shapes. A division by zero
/// is left for evaluate() to report.
void foldLast(std::vector<Expression::Instruction> &code) {
  const Expression::Instruction last = code.back();
  if (last.op == Op::Constant || last.op == Op::Dim)
    return;
  size_t arity = last.op == Op::Select ? 3 : 2, n = code.size();
  if (n < arity + 1)
    return;
  for (size_t i = n - 1 - arity; i < n - 1; ++i)
    if (code[i].op != Op::Constant)
      return;
  int64_t value = 0;
  if (last.op == Op::Select) {
    value = code[n - 4].operand ? code[n - 3].operand : code[n - 2].operand;
  } else {
    const char *why = nullptr;
    value = applyBinary(last, code[n - 3].operand, code[n - 2].operand, why);
    if (why)
      return;
  }
  code.resize(n - 1 - arity);
  code.push_back({Op::Constant, value});
}

Error planError(std::string message) {
  return makeError(ErrorCode::CorruptEntry, "launch plan: " + message);
}

} // namespace

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

std::string LaunchPlan::serialize() const {
  if (!unsupported.empty())
    return "unsupported: " + unsupported + "\n";
  std::string text;
  for (const LaunchStep &step : steps) {
    text += "launch " + step.kernelName;
    for (const std::string &size : step.sizes)
      text += "|" + size;
    for (const std::string &argument : step.arguments)
      text += "|" + argument;
    text += "\n";
  }
  return text;
}

Expected<LaunchPlan> LaunchPlan::parse(std::string_view text) {
  LaunchPlan plan;
  if (text.starts_with("unsupported: ")) {
    text.remove_prefix(13);
    if (text.ends_with('\n'))
      text.remove_suffix(1);
    plan.unsupported = std::string(text);
    return plan;
  }
  for (std::string_view line : split(text, '\n')) {
    if (line.empty())
      continue;
    if (!line.starts_with("launch "))
      return planError("unexpected line '" + std::string(line) + "'");
    std::vector<std::string_view> fields = split(line.substr(7), '|');
    if (fields.size() < 8)
      return planError("a launch line has " + std::to_string(fields.size()) +
                       " fields");
    LaunchStep step;
    step.kernelName = std::string(fields[0]);
    for (size_t i = 0; i < 7; ++i)
      step.sizes[i] = std::string(fields[i + 1]);
    for (size_t i = 8; i < fields.size(); ++i)
      step.arguments.emplace_back(fields[i]);
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Expected<Expression> Expression::compile(std::string_view text,
                                         size_t paramCount) {
  Expression expression;
  expression.source = std::string(text);
  auto bad = [&](std::string why) {
    return makeError(ErrorCode::InvalidArgument,
                     "launch expression '" + std::string(text) + "': " + why);
  };
  size_t depth = 0;
  for (std::string_view token : split(text, ' ')) {
    if (token.empty())
      continue;
    Instruction instruction{Op::Constant, 0};
    size_t pops = 0;
    if (parseInteger(token, instruction.operand)) {
      instruction.op = Op::Constant;
    } else if (token.starts_with("dim:")) {
      std::vector<std::string_view> parts = split(token, ':');
      size_t param = 0, dim = 0;
      if (parts.size() != 3 || !parseIndex(parts[1], param) ||
          !parseIndex(parts[2], dim) || dim > 1)
        return bad("bad token '" + std::string(token) + "'");
      if (param >= paramCount)
        return bad("'" + std::string(token) + "' names parameter " +
                   std::to_string(param) + " of " + std::to_string(paramCount));
      instruction = {Op::Dim, int64_t(param * 2 + dim)};
    } else if (token == "sel") {
      instruction.op = Op::Select;
      pops = 2;
    } else if (token.starts_with("cmp:")) {
      size_t predicate = 0;
      if (!parseIndex(token.substr(4), predicate) || predicate > 9)
        return bad("bad predicate '" + std::string(token) + "'");
      instruction = {Op::Cmp, int64_t(predicate)};
      pops = 1;
    } else {
      bool known = false;
      for (const NamedOp &named : kBinaryOps)
        if (named.name == token) {
          instruction.op = named.op;
          known = true;
        }
      if (!known)
        return bad("unknown token '" + std::string(token) + "'");
      pops = 1;
    }
    // Operators pop their operands and push one result.
    if (instruction.op != Op::Constant && instruction.op != Op::Dim) {
      if (depth < pops + 1)
        return bad("stack underflow");
      depth -= pops;
    } else {
      ++depth;
    }
    if (depth > kMaxStack)
      return bad("deeper than " + std::to_string(kMaxStack) + " operands");
    expression.maxDepth = std::max(expression.maxDepth, depth);
    expression.code.push_back(instruction);
    foldLast(expression.code);
  }
  if (depth != 1)
    return bad("does not reduce to one value");
  return expression;
}

Expected<int64_t> Expression::evaluate(std::span<const Shape> shapes) const {
  int64_t stack[kMaxStack];
  size_t top = 0;
  auto bad = [&](const char *why) {
    return makeError(ErrorCode::InvalidArgument,
                     "launch expression '" + source + "': " + why);
  };
  for (const Instruction &instruction : code) {
    switch (instruction.op) {
    case Op::Constant:
      stack[top++] = instruction.operand;
      continue;
    case Op::Dim: {
      size_t param = size_t(instruction.operand) / 2;
      if (param >= shapes.size())
        return bad("names a parameter the call does not have");
      stack[top++] = shapes[param][size_t(instruction.operand) % 2];
      continue;
    }
    case Op::Select: {
      int64_t otherwise = stack[--top];
      int64_t then = stack[--top];
      stack[top - 1] = stack[top - 1] ? then : otherwise;
      continue;
    }
    default:
      break;
    }
    int64_t rhs = stack[--top];
    const char *why = nullptr;
    stack[top - 1] = applyBinary(instruction, stack[top - 1], rhs, why);
    if (why)
      return bad(why);
  }
  return stack[0];
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

Expected<CompiledStep> compileStep(const LaunchStep &step, size_t paramCount,
                                   int64_t workspaceWords) {
  auto inStep = [&](Error error) {
    error.message = step.kernelName + ": " + error.message;
    return error;
  };
  if (workspaceWords < 0 || workspaceWords > workspace_abi::kMaxWords)
    return makeError(ErrorCode::InvalidArgument,
                     "workspace of " + std::to_string(workspaceWords) +
                         " words is outside [0, " +
                         std::to_string(workspace_abi::kMaxWords) + "]");
  CompiledStep compiled;
  compiled.kernelName = step.kernelName;
  for (size_t i = 0; i < 7; ++i) {
    Expected<Expression> size = Expression::compile(step.sizes[i], paramCount);
    if (!size)
      return inStep(std::move(size).takeError());
    compiled.sizes[i] = std::move(*size);
  }
  for (const std::string &text : step.arguments) {
    Argument argument;
    std::string_view body = text;
    if (body.starts_with("m:")) {
      // Index paramCount is the workspace, when the kernels take one.
      size_t limit = paramCount + (workspaceWords > 0 ? 1 : 0);
      if (!parseIndex(body.substr(2), argument.param) ||
          argument.param >= limit)
        return inStep(makeError(ErrorCode::InvalidArgument,
                                "argument '" + text +
                                    "' names no parameter of " +
                                    std::to_string(paramCount)));
      argument.kind = argument.param == paramCount ? Argument::Kind::Workspace
                                                   : Argument::Kind::Memref;
      // Every ABI parameter, the workspace too, is a rank-2 memref.
      compiled.slotCount += abi::memrefDescriptorSlots(2);
    } else if (body.starts_with("s32:") || body.starts_with("s64:")) {
      argument.kind =
          body[1] == '3' ? Argument::Kind::Scalar32 : Argument::Kind::Scalar64;
      Expected<Expression> value =
          Expression::compile(body.substr(4), paramCount);
      if (!value)
        return inStep(std::move(value).takeError());
      argument.value = std::move(*value);
      compiled.slotCount += 1;
    } else {
      return inStep(makeError(ErrorCode::InvalidArgument,
                              "argument '" + text +
                                  "' is neither m:P nor s32:/s64:EXPR"));
    }
    compiled.arguments.push_back(std::move(argument));
  }
  if (compiled.slotCount > kMaxLaunchSlots)
    return inStep(makeError(ErrorCode::InvalidArgument,
                            std::to_string(compiled.slotCount) +
                                " kernel parameters; at most " +
                                std::to_string(kMaxLaunchSlots)));
  return compiled;
}

Expected<LaunchProgram> compileLaunchPlan(const LaunchPlan &plan,
                                          size_t paramCount,
                                          int64_t workspaceWords) {
  if (!plan.unsupported.empty())
    return makeError(ErrorCode::Unsupported,
                     "this kernel cannot be launched: " + plan.unsupported);
  LaunchProgram program;
  program.paramCount = paramCount;
  program.workspaceWords = workspaceWords;
  for (const LaunchStep &step : plan.steps) {
    Expected<CompiledStep> compiled =
        compileStep(step, paramCount, workspaceWords);
    if (!compiled)
      return std::move(compiled).takeError();
    program.steps.push_back(std::move(*compiled));
  }
  return program;
}

std::string launchSizesProblem(const std::string &kernel,
                               std::span<const int64_t, 7> sizes) {
  constexpr int64_t kMaxGridOrShared = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < 3; ++i)
    if (sizes[i] < 0 || sizes[i] > kMaxGridOrShared || sizes[3 + i] < 1 ||
        sizes[3 + i] > 1024)
      return kernel + ": grid " + std::to_string(sizes[i]) + " or block " +
             std::to_string(sizes[3 + i]) + " is not launchable";
  if (sizes[6] < 0 || sizes[6] > kMaxGridOrShared)
    return kernel + ": shared bytes " + std::to_string(sizes[6]) +
           " out of range";
  return "";
}

size_t packRowMajorDescriptor(uint64_t address, std::span<const int64_t> dims,
                              std::span<uint64_t> slots, size_t slot) {
  slots[slot++] = address;
  slots[slot++] = address;
  slots[slot++] = 0;
  for (int64_t dim : dims)
    slots[slot++] = uint64_t(dim);
  // Row-major strides, innermost 1.
  uint64_t stride = 1;
  for (size_t axis = dims.size(); axis > 0; --axis) {
    slots[slot + axis - 1] = stride;
    stride *= uint64_t(dims[axis - 1]);
  }
  return slot + dims.size();
}

Status resolveStep(const CompiledStep &step, std::span<const Shape> shapes,
                   std::span<const uint64_t> addresses, uint64_t workspace,
                   int64_t workspaceWords, ResolvedStep &out) {
  for (size_t i = 0; i < 7; ++i) {
    Expected<int64_t> value = step.sizes[i].evaluate(shapes);
    if (!value)
      return std::move(value).takeError();
    out.sizes[i] = *value;
  }
  size_t slot = 0;
  // Only an error's message allocates: a launchable size is "" (SSO).
  if (!out.empty())
    if (std::string problem = launchSizesProblem(step.kernelName, out.sizes);
        !problem.empty())
      return makeError(ErrorCode::InvalidArgument, problem);
  for (const Argument &argument : step.arguments) {
    if (argument.kind == Argument::Kind::Workspace) {
      const std::array<int64_t, 2> dims{1, workspaceWords};
      slot = packRowMajorDescriptor(workspace, dims, out.slots, slot);
      continue;
    }
    if (argument.kind == Argument::Kind::Memref) {
      if (argument.param >= addresses.size() || argument.param >= shapes.size())
        return makeError(ErrorCode::InvalidArgument,
                         step.kernelName + ": the call has no parameter " +
                             std::to_string(argument.param));
      const Shape &shape = shapes[argument.param];
      slot = packRowMajorDescriptor(addresses[argument.param], shape, out.slots,
                                    slot);
      continue;
    }
    Expected<int64_t> value = argument.value.evaluate(shapes);
    if (!value)
      return std::move(value).takeError();
    // A 32-bit scalar is the low half of its slot (little endian).
    out.slots[slot++] = argument.kind == Argument::Kind::Scalar32
                            ? uint64_t(uint32_t(*value))
                            : uint64_t(*value);
  }
  if (slot != step.slotCount)
    return makeError(ErrorCode::InvalidArgument,
                     step.kernelName + ": compiled for " +
                         std::to_string(step.slotCount) +
                         " kernel parameters, packed " + std::to_string(slot) +
                         " (workspace words differ from the compile?)");
  for (size_t i = 0; i < slot; ++i)
    out.pointers[i] = &out.slots[i];
  out.slotCount = slot;
  return Status::success();
}

} // namespace lowbit::launch
