//===- CalibrationTable.cpp - Print the report's calibration table -------===//
//
// lowbit-calibration-table [--long] MANIFEST: the markdown table of
// docs/gpu-report.md ("Calibration"), one row per case of the manifest
// (tests/data/report/calibration/cases.txt), the model's prediction beside
// the published time (--long: the report's long form of each case, as
// `lowbit report` prints it). report.calibration checks the doc's rows.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/Calibration.h"

#include <cstdio>
#include <string_view>

int main(int argc, char **argv) {
  using namespace lowbit::report;
  bool longForm = argc == 3 && std::string_view(argv[1]) == "--long";
  if (argc != 2 && !longForm) {
    std::fprintf(stderr, "usage: lowbit-calibration-table [--long] MANIFEST\n");
    return 2;
  }
  auto cases = loadCalibrationCases(argv[argc - 1]);
  if (!cases) {
    std::fprintf(stderr, "%s\n", cases.error().message.c_str());
    return 1;
  }
  std::string table = longForm ? "" : calibrationTableHeader();
  for (const CalibrationCase &calibration : *cases) {
    auto report = analyzeSpec(calibration.input);
    if (!report) {
      std::fprintf(stderr, "%s: %s\n", calibration.name.c_str(),
                   report.error().message.c_str());
      return 1;
    }
    table += longForm ? formatReportText(*report)
                      : calibrationTableRow(calibration, *report);
  }
  std::fputs(table.c_str(), stdout);
  return 0;
}
