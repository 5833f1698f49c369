//===- Calibration.h - The model against published kernel times -*- C++ -*-===//
//
// Public CUDA kernels with a published time on a named part (vLLM's FP8
// quantize, TensorRT-LLM's 1x128 quantize, ...), compiled from their source
// with the project's toolkit: the committed PTX and nvdisasm text, the
// launch and the buffers, and the published figure with its source. The
// report's model predicts each one's time from the same inputs it reads
// for lowbit's kernels; docs/gpu-report.md ("Calibration") has the table
// and tests/data/report/calibration/ the inputs. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_CALIBRATION_H
#define LOWBIT_RUNTIME_REPORT_CALIBRATION_H

#include "lowbit/Expected.h"
#include "runtime/report/GpuReport.h"

#include <string>
#include <vector>

namespace lowbit::report {

/// One public kernel (or launch sequence) at one shape on one part.
struct CalibrationCase {
  std::string name;  ///< "vLLM static_scaled_fp8_quant (per-tensor)"
  std::string shape; ///< "[4096, 4096] bf16 -> fp8 e4m3"
  std::string part;  ///< the device the time was measured on: "H100 SXM"
  double publishedSeconds = 0;
  std::string publishedSource; ///< "vLLM PR #33918, ..."
  /// The report's input: the PTX, SASS, launches, ptxas's resources and
  /// the buffers; its minimum is every buffer once.
  SpecInput input;
};

/// Reads a calibration manifest (tests/data/report/calibration/cases.txt:
/// its format is described there) and the PTX and SASS files it names,
/// relative to the manifest's directory. A malformed line, an unknown
/// part or a missing file is an error naming the line.
Expected<std::vector<CalibrationCase>>
loadCalibrationCases(const std::string &manifestPath);

/// The model's time of a case is analyzeSpec(input).seconds, the sum over
/// its launches; the error is predicted / published - 1.
double calibrationError(const CalibrationCase &calibration,
                        const SpecReport &report);

/// The header and one row of docs/gpu-report.md's calibration table:
/// `| kernel | shape | chip | predicted | published | error | limited by |
/// source |`.
std::string calibrationTableHeader();
std::string calibrationTableRow(const CalibrationCase &calibration,
                                const SpecReport &report);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_CALIBRATION_H
