//===- LaunchPlan.cpp - The launch plan's text form and evaluator ---------===//

#include "runtime/jit/LaunchPlan.h"

#include <charconv>

namespace lowbit::jit {

namespace {

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

Error planError(std::string message) {
  return makeError(ErrorCode::CorruptEntry, "launch plan: " + message);
}

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

} // namespace

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

Expected<int64_t> evaluateSize(std::string_view expression,
                               const ParamShapes &shapes) {
  std::vector<int64_t> stack;
  auto bad = [&](std::string why) {
    return makeError(ErrorCode::InvalidArgument,
                     "launch plan expression '" + std::string(expression) +
                         "': " + why);
  };
  for (std::string_view token : split(expression, ' ')) {
    if (token.empty())
      continue;
    int64_t number = 0;
    auto [end, ec] =
        std::from_chars(token.data(), token.data() + token.size(), number);
    if (ec == std::errc() && end == token.data() + token.size()) {
      stack.push_back(number);
      continue;
    }
    if (token.starts_with("dim:")) {
      std::vector<std::string_view> parts = split(token, ':');
      size_t param = 0, dim = 0;
      if (parts.size() != 3 ||
          std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(),
                          param)
                  .ec != std::errc() ||
          std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(),
                          dim)
                  .ec != std::errc() ||
          param >= shapes.size() || dim > 1)
        return bad("bad token '" + std::string(token) + "'");
      stack.push_back(shapes[param][dim]);
      continue;
    }
    if (token == "sel") {
      if (stack.size() < 3)
        return bad("stack underflow");
      int64_t otherwise = stack.back();
      stack.pop_back();
      int64_t then = stack.back();
      stack.pop_back();
      stack.back() = stack.back() ? then : otherwise;
      continue;
    }
    if (stack.size() < 2)
      return bad("stack underflow");
    int64_t rhs = stack.back();
    stack.pop_back();
    int64_t lhs = stack.back();
    uint64_t ul = uint64_t(lhs), ur = uint64_t(rhs);
    bool divides = token.starts_with("div") || token.starts_with("ceildiv") ||
                   token.starts_with("floordiv") || token.starts_with("rem");
    if (divides && rhs == 0)
      return bad("division by zero");
    int64_t result;
    if (token == "add")
      result = int64_t(ul + ur);
    else if (token == "sub")
      result = int64_t(ul - ur);
    else if (token == "mul")
      result = int64_t(ul * ur);
    else if (token == "divs")
      result = lhs / rhs;
    else if (token == "divu")
      result = int64_t(ul / ur);
    else if (token == "ceildivs")
      result = -floorDiv(-lhs, rhs);
    else if (token == "ceildivu")
      result = int64_t((ul + ur - 1) / ur);
    else if (token == "floordivs")
      result = floorDiv(lhs, rhs);
    else if (token == "rems")
      result = lhs % rhs;
    else if (token == "remu")
      result = int64_t(ul % ur);
    else if (token == "maxs")
      result = std::max(lhs, rhs);
    else if (token == "mins")
      result = std::min(lhs, rhs);
    else if (token == "maxu")
      result = int64_t(std::max(ul, ur));
    else if (token == "minu")
      result = int64_t(std::min(ul, ur));
    else if (token.starts_with("cmp:")) {
      // arith::CmpIPredicate: eq ne slt sle sgt sge ult ule ugt uge.
      int predicate = -1;
      std::from_chars(token.data() + 4, token.data() + token.size(),
                      predicate);
      switch (predicate) {
      case 0: result = lhs == rhs; break;
      case 1: result = lhs != rhs; break;
      case 2: result = lhs < rhs; break;
      case 3: result = lhs <= rhs; break;
      case 4: result = lhs > rhs; break;
      case 5: result = lhs >= rhs; break;
      case 6: result = ul < ur; break;
      case 7: result = ul <= ur; break;
      case 8: result = ul > ur; break;
      case 9: result = ul >= ur; break;
      default:
        return bad("bad predicate '" + std::string(token) + "'");
      }
    } else {
      return bad("unknown token '" + std::string(token) + "'");
    }
    stack.back() = result;
  }
  if (stack.size() != 1)
    return bad("does not reduce to one value");
  return stack.back();
}

Expected<ResolvedLaunch> resolveLaunch(const LaunchStep &step,
                                       const ParamShapes &shapes,
                                       std::span<const uint64_t> buffers) {
  ResolvedLaunch launch;
  for (int i = 0; i < 7; ++i) {
    Expected<int64_t> value = evaluateSize(step.sizes[i], shapes);
    if (!value)
      return std::move(value).takeError();
    launch.sizes[i] = *value;
  }
  launch.values.reserve(step.arguments.size() * 7);
  for (const std::string &argument : step.arguments) {
    if (argument.starts_with("m:")) {
      size_t param = 0;
      std::from_chars(argument.data() + 2, argument.data() + argument.size(),
                      param);
      if (param >= buffers.size() || param >= shapes.size())
        return makeError(ErrorCode::InvalidArgument,
                         "launch plan names parameter " +
                             std::to_string(param));
      int64_t paramRows = shapes[param][0], paramCols = shapes[param][1];
      launch.values.insert(launch.values.end(),
                           {buffers[param], buffers[param], 0,
                            uint64_t(paramRows), uint64_t(paramCols),
                            uint64_t(paramCols), 1});
      continue;
    }
    size_t colon = argument.find(':');
    Expected<int64_t> value = evaluateSize(argument.substr(colon + 1), shapes);
    if (!value)
      return std::move(value).takeError();
    launch.values.push_back(uint64_t(*value));
  }
  return launch;
}

} // namespace lowbit::jit
