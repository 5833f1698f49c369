//===- FusionTraffic.cpp - Bytes a fused kernel saves, from the model -----===//

#include "runtime/report/FusionTraffic.h"

#include "runtime/spec/KernelAbi.h"

namespace lowbit::report {

FusionTraffic fusionTraffic(const KernelSpec &spec, int64_t rows,
                            int64_t cols) {
  KernelSpec sized = spec;
  sized.rows = rows;
  sized.cols = cols;
  FusionTraffic traffic;
  // Every parameter once: what the fused kernel reads and writes.
  for (const KernelAbiParam &param : kernelAbi(sized))
    traffic.fusedBytes += double(param.shape.rows) * double(param.shape.cols) *
                          double(kernelParamElementBytes(sized, param.element));
  // Unfused, each prologue's [rows, cols] result is written in the value
  // dtype and read back by the next kernel.
  double valueBytes =
      double(kernelParamElementBytes(sized, KernelParamElement::Value));
  double intermediate = 2 * valueBytes * double(rows) * double(cols);
  traffic.unfusedKernels = int(spec.prologues.size()) + 1;
  traffic.unfusedBytes =
      traffic.fusedBytes + double(spec.prologues.size()) * intermediate;
  double elements = double(rows) * double(cols);
  traffic.fusedPerElement = traffic.fusedBytes / elements;
  traffic.unfusedPerElement = traffic.unfusedBytes / elements;
  return traffic;
}

} // namespace lowbit::report
