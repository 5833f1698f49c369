//===- Calibration.cpp - The model against published kernel times ---------===//
//
// The manifest is line-based: `case NAME` opens a case, the keys below fill
// it (tests/data/report/calibration/cases.txt describes each).
//
//===----------------------------------------------------------------------===//

#include "runtime/report/Calibration.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace lowbit::report {

namespace {

Expected<std::string> readText(const std::filesystem::path &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return makeError(ErrorCode::Io,
                     "calibration: cannot read " + path.string());
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> words(const std::string &line) {
  std::istringstream stream(line);
  std::vector<std::string> out;
  for (std::string word; stream >> word;)
    out.push_back(word);
  return out;
}

template <typename T> bool parseNumber(const std::string &text, T &value) {
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

/// The rest of `line` after its first `count` words.
std::string restAfter(const std::string &line, size_t count) {
  size_t position = 0;
  for (size_t word = 0; word < count; ++word) {
    position = line.find_first_not_of(' ', position);
    position = line.find(' ', position);
    if (position == std::string::npos)
      return "";
  }
  size_t start = line.find_first_not_of(' ', position);
  return start == std::string::npos ? "" : line.substr(start);
}

/// One line of a case; an error message, or empty.
std::string applyLine(const std::filesystem::path &directory,
                      const std::string &line, CalibrationCase &current) {
  std::vector<std::string> word = words(line);
  const std::string &key = word[0];
  SpecInput &input = current.input;
  auto file = [&](std::string &into) -> std::string {
    if (word.size() != 2)
      return key + " takes one file name";
    Expected<std::string> text = readText(directory / word[1]);
    if (!text)
      return text.error().message;
    into = std::move(*text);
    return "";
  };
  if (key == "shape") {
    current.shape = restAfter(line, 1);
  } else if (key == "part") {
    current.part = restAfter(line, 1);
    std::optional<ChipModel> chip = partModel(current.part);
    if (!chip)
      return "no part '" + current.part + "' in the chip table";
    input.chip = *chip;
  } else if (key == "ptx") {
    return file(input.ptx);
  } else if (key == "sass") {
    return file(input.sass);
  } else if (key == "elements" || key == "value-bytes") {
    int64_t value = 0;
    if (word.size() != 2 || !parseNumber(word[1], value) || value <= 0)
      return key + " takes one positive integer";
    if (key == "elements")
      input.elements = value;
    else
      input.valueBytes = int(value);
  } else if (key == "buffer") {
    // buffer ROLE BYTES [written]
    Buffer buffer;
    if (word.size() < 3 || word.size() > 4 ||
        !parseNumber(word[2], buffer.bytes) ||
        (word.size() == 4 && word[3] != "written"))
      return "buffer takes a role, a byte count and optionally 'written'";
    buffer.role = word[1];
    buffer.written = word.size() == 4;
    input.minimumBytes += double(buffer.bytes);
    input.buffers.push_back(buffer);
  } else if (key == "launch") {
    // launch KERNEL GX GY GZ BX BY BZ DYNAMIC-SHARED grid|grid-stride
    //        PARAMETERS (one per .param slot: a buffer's role, =VALUE for
    //        an integer argument, or -)
    KernelLaunch launch;
    if (word.size() < 11)
      return "launch takes a kernel, grid and block sizes, dynamic shared "
             "bytes, grid or grid-stride, and the parameters' buffers";
    launch.kernel = word[1];
    for (int i = 0; i < 3; ++i)
      if (!parseNumber(word[size_t(2 + i)], launch.grid[size_t(i)]) ||
          !parseNumber(word[size_t(5 + i)], launch.block[size_t(i)]))
        return "launch: grid and block sizes are integers";
    if (!parseNumber(word[8], launch.dynamicSharedBytes))
      return "launch: dynamic shared bytes is an integer";
    if (word[9] != "grid" && word[9] != "grid-stride")
      return "launch: '" + word[9] + "' is neither grid nor grid-stride";
    launch.gridStride = word[9] == "grid-stride";
    launch.policy = launch.gridStride ? "grid-stride" : "grid grows with it";
    for (size_t w = 10; w < word.size(); ++w) {
      if (word[w].starts_with('=')) {
        int64_t value = 0;
        if (!parseNumber(word[w].substr(1), value))
          return "launch: '" + word[w] + "' is not =INTEGER";
        launch.parameterValues[int(w - 10)] = value;
        launch.bufferOfParameter.push_back(-1);
        continue;
      }
      int buffer = -1;
      for (size_t b = 0; b < input.buffers.size(); ++b)
        if (input.buffers[b].role == word[w])
          buffer = int(b);
      if (buffer < 0 && word[w] != "-")
        return "launch: no buffer '" + word[w] + "' above";
      launch.bufferOfParameter.push_back(buffer);
    }
    input.launches.push_back(launch);
  } else if (key == "ptxas-log") {
    // ptxas's -v log of the same compile: registers, shared memory, spills.
    std::string log;
    if (std::string why = file(log); !why.empty())
      return why;
    input.resources = runtime::parsePtxasInfoLog(log);
    if (input.resources.empty())
      return "ptxas-log: no 'Compiling entry function' record";
  } else if (key == "published") {
    // published MICROSECONDS SOURCE...
    double microseconds = 0;
    if (word.size() < 3 || !parseNumber(word[1], microseconds) ||
        microseconds <= 0)
      return "published takes microseconds and a source";
    current.publishedSeconds = microseconds * 1e-6;
    current.publishedSource = restAfter(line, 2);
  } else {
    return "unknown key '" + key + "'";
  }
  return "";
}

} // namespace

Expected<std::vector<CalibrationCase>>
loadCalibrationCases(const std::string &manifestPath) {
  Expected<std::string> text = readText(manifestPath);
  if (!text)
    return text.error();
  std::filesystem::path directory =
      std::filesystem::path(manifestPath).parent_path();
  std::vector<CalibrationCase> cases;
  std::istringstream lines(*text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (words(line).empty() || line.front() == '#')
      continue;
    auto fail = [&](const std::string &why) {
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{}:{}: {}", manifestPath, number, why));
    };
    if (words(line)[0] == "case") {
      cases.emplace_back();
      cases.back().name = restAfter(line, 1);
      cases.back().input.title = cases.back().name;
      continue;
    }
    if (cases.empty())
      return fail("a key before the first 'case'");
    if (std::string why = applyLine(directory, line, cases.back());
        !why.empty())
      return fail(why);
  }
  for (const CalibrationCase &calibration : cases)
    if (calibration.part.empty() || calibration.input.ptx.empty() ||
        calibration.input.launches.empty() || calibration.input.elements <= 0 ||
        calibration.publishedSeconds <= 0)
      return makeError(ErrorCode::InvalidArgument,
                       manifestPath + ": case '" + calibration.name +
                           "' lacks a part, ptx, launch, elements or "
                           "published time");
  return cases;
}

double calibrationError(const CalibrationCase &calibration,
                        const SpecReport &report) {
  return report.seconds / calibration.publishedSeconds - 1;
}

std::string calibrationTableHeader() {
  return "| kernel | shape | chip | predicted | published | error | limited "
         "by | source |\n"
         "|---|---|---|---|---|---|---|---|\n";
}

std::string calibrationTableRow(const CalibrationCase &calibration,
                                const SpecReport &report) {
  return fmt::format("| {} | {} | {} | {:.1f} us | {:.1f} us | {:+.0f}% | "
                     "{} | {} |\n",
                     calibration.name, calibration.shape, calibration.part,
                     report.seconds * 1e6, calibration.publishedSeconds * 1e6,
                     100 * calibrationError(calibration, report),
                     report.limiter, calibration.publishedSource);
}

} // namespace lowbit::report
