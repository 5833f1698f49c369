// The NVRTC reference kernels, compiled for the host (HostEmulation.h) and
// run one emulated thread at a time, against lowbit's CPU reference
// quantizer (format/Quantize), bit for bit: codes, scales, zero points, the
// global scale and dequantized values, for every scheme and input dtype.
// This keeps the GPU oracle and the reference in step on a machine without
// a GPU; ReferenceKernelsGpuTest runs the same kernels on the device.

#include "HostEmulation.h"

// Every reference kernel takes the ABI's full parameter list, so a scheme
// without zero points or a global scale leaves those parameters unused: the
// text is CUDA source for NVRTC, compiled here for the host as it is.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "AllReferenceKernels.inc"
#pragma GCC diagnostic pop

#include "format/Codec.h"
#include "format/Quantize.h"
#include "runtime/nvrtc/ReferenceKernels.h"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace lowbit;

namespace {

struct Shape {
  int64_t rows, cols;
  bool specials; // NaN, -inf and signed zeros in the input
};

std::vector<float> makeInput(const Shape &shape, uint32_t seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Row magnitudes from 2^-30 to 2^30 reach subnormal e8m0 scales,
  // saturation and f16 scale overflow.
  std::uniform_real_distribution<float> exponent(-30.0f, 30.0f);
  std::vector<float> values(size_t(shape.rows * shape.cols));
  for (int64_t row = 0; row < shape.rows; ++row) {
    float rowScale = std::exp2(exponent(generator));
    for (int64_t col = 0; col < shape.cols; ++col)
      values[size_t(row * shape.cols + col)] = normal(generator) * rowScale;
  }
  if (shape.specials && values.size() > 8) {
    values[1] = std::numeric_limits<float>::quiet_NaN();
    values[3] = -std::numeric_limits<float>::infinity();
    values[5] = 0.0f;
    values[7] = -0.0f;
  }
  return values;
}

} // namespace

TEST_CASE("The NVRTC reference kernels, run on the host, match the CPU "
          "reference bit for bit",
          "[runtime][nvrtc][oracle]") {
  const std::vector<Shape> shapes = {{1, 1, false},
                                     {3, 77, true},
                                     {5, 33, false},
                                     {17, 256, false},
                                     {64, 4096, true}};
  for (const HostReferenceKernel &kernel : kHostReferenceKernels) {
    DYNAMIC_SECTION(kernel.scheme << " from " << kernel.dtype) {
      std::optional<Scheme> scheme = lookupScheme(kernel.scheme);
      REQUIRE(scheme);
      auto source = runtime::referenceKernelSource(kernel.scheme, kernel.dtype);
      REQUIRE(source.ok());
      std::string dtype = kernel.dtype;
      size_t width = size_t(scaleStorageBits(scheme->scale.type) / 8);
      for (const Shape &shape : shapes) {
        for (uint32_t seed = 0; seed < 3; ++seed) {
          INFO("shape " << shape.rows << "x" << shape.cols << " seed " << seed);
          std::vector<float> input = makeInput(
              shape, seed * 7919 + uint32_t(shape.rows * 131 + shape.cols));
          std::string error;
          std::optional<QuantizedTensor> expected;
          std::vector<uint16_t> halves;
          const void *x = input.data();
          if (dtype == "f32") {
            expected = quantize(*scheme, input, shape.rows, shape.cols, &error);
          } else {
            HalfType type = dtype == "f16" ? HalfType::F16 : HalfType::BF16;
            for (float value : input)
              halves.push_back(type == HalfType::F16 ? floatToHalf(value)
                                                     : floatToBFloat16(value));
            expected = quantizeHalf(*scheme, type, halves, shape.rows,
                                    shape.cols, StaticScales{}, &error);
            x = halves.data();
          }
          INFO(error);
          REQUIRE(expected);

          long long rows = shape.rows, cols = shape.cols;
          long long count = rows * cols;
          unsigned amaxBits = 0;
          if (source->needsTensorAmax)
            runHostGrid(count, [&] { kernel.amax(x, count, &amaxBits); });
          std::vector<uint8_t> codes(expected->codes.size());
          std::vector<uint8_t> scales(expected->scaleCodes.size() * width);
          std::vector<uint8_t> zeros(
              std::max<size_t>(expected->zeros.size(), 1));
          float global = 0;
          runHostGrid(runtime::quantizeThreads(*source, rows, cols), [&] {
            kernel.quantize(x, rows, cols, &amaxBits, codes.data(),
                            scales.data(), zeros.data(), &global);
          });
          CHECK(codes == expected->codes);
          std::vector<uint8_t> expectedScales(scales.size());
          for (size_t index = 0; index < expected->scaleCodes.size(); ++index)
            std::memcpy(expectedScales.data() + index * width,
                        &expected->scaleCodes[index], width);
          CHECK(scales == expectedScales);
          if (!expected->zeros.empty()) {
            zeros.resize(expected->zeros.size());
            CHECK(zeros == expected->zeros);
          }
          if (scheme->scale.globalScale != GlobalScale::None)
            CHECK(floatBits(global) == floatBits(expected->globalScale));

          std::optional<std::vector<float>> restored =
              dequantize(*expected, &error);
          REQUIRE(restored);
          std::vector<uint8_t> expectedZeros = expected->zeros;
          expectedZeros.resize(std::max<size_t>(expectedZeros.size(), 1));
          std::vector<float> values(static_cast<size_t>(count));
          runHostGrid(count, [&] {
            kernel.dequantize(expected->codes.data(), rows, cols,
                              expectedScales.data(), expectedZeros.data(),
                              &expected->globalScale, values.data());
          });
          size_t mismatches = 0;
          for (size_t index = 0; index < values.size(); ++index) {
            bool bothNan =
                std::isnan(values[index]) && std::isnan((*restored)[index]);
            if (!bothNan &&
                floatBits(values[index]) != floatBits((*restored)[index]))
              ++mismatches;
          }
          CHECK(mismatches == 0);
        }
      }
    }
  }
}
