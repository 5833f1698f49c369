// On a machine with a GPU: the NVRTC reference kernels (NVIDIA's own
// conversions) against lowbit's CPU reference quantizer (format/Quantize),
// bit for bit, for every named scheme, f32 and bf16 inputs and ragged
// shapes. Without a driver or a device the test says so and passes: this
// build machine has neither, the GPU machine runs it.

#include "format/Codec.h"
#include "format/Quantize.h"
#include "runtime/driver/CudaDriver.h"
#include "runtime/nvrtc/ReferenceKernels.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace lowbit;
using namespace lowbit::runtime;

namespace {

struct Shape {
  int64_t rows, cols;
  bool specials; // NaN and inf in the input
};

std::vector<float> makeInput(const Shape &shape, uint32_t seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> magnitude(-6.0f, 6.0f);
  std::vector<float> values(size_t(shape.rows * shape.cols));
  for (int64_t row = 0; row < shape.rows; ++row) {
    // Rows of very different magnitudes exercise the scale rules.
    float rowScale = std::exp2(magnitude(generator));
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

/// Bytes of one stored scale.
size_t scaleBytes(ScaleType type) { return size_t(scaleStorageBits(type) / 8); }

uint32_t loadScaleCode(const std::vector<uint8_t> &bytes, size_t index,
                       size_t width) {
  uint32_t code = 0;
  std::memcpy(&code, bytes.data() + index * width, width);
  return code;
}

} // namespace

TEST_CASE("NVRTC reference kernels match the CPU reference bit for bit on "
          "the GPU",
          "[runtime][gpu]") {
  auto driver = cudaDriver();
  // Registered under the ctest label "gpu", which the default run leaves
  // out: asked to run, a machine without a GPU is a failure, not a pass.
  INFO((driver ? std::string() : driver.error().message));
  REQUIRE(bool(driver));
  auto context = CudaContext::open(**driver, 0);
  INFO((context ? std::string() : context.error().message));
  REQUIRE(bool(context));
  std::string chip = context->chip();
  if (context->computeMajor() == 9)
    chip += "a";
  auto nvrtc = nvrtcLibrary();
  REQUIRE(nvrtc.ok());
  auto linker = nvJitLinkLibrary();
  REQUIRE(linker.ok());
  const CudaDriverApi &api = **driver;

  const std::vector<Shape> shapes = {
      {1, 1, false}, {3, 77, true}, {17, 256, false}, {64, 4096, true}};
  for (const std::string &schemeName : referenceKernelSchemes()) {
    for (const char *dtype : {"f32", "bf16"}) {
      DYNAMIC_SECTION(schemeName << " from " << dtype << " on " << chip) {
        std::optional<Scheme> scheme = lookupScheme(schemeName);
        REQUIRE(scheme);
        auto source = referenceKernelSource(schemeName, dtype);
        REQUIRE(source.ok());
        auto build = buildReferenceKernel(**nvrtc, *linker, *source, chip);
        INFO((build.ok() ? "" : build.error().message));
        REQUIRE(build.ok());
        auto quantizeKernel =
            CudaModule::load(*context, build->cubin, "lowbit_ref_quantize");
        auto amaxKernel =
            CudaModule::load(*context, build->cubin, "lowbit_ref_amax");
        auto dequantizeKernel =
            CudaModule::load(*context, build->cubin, "lowbit_ref_dequantize");
        REQUIRE(dequantizeKernel.ok());
        REQUIRE(quantizeKernel.ok());
        REQUIRE(amaxKernel.ok());

        for (const Shape &shape : shapes) {
          INFO("shape " << shape.rows << "x" << shape.cols);
          std::vector<float> input =
              makeInput(shape, uint32_t(shape.rows * 131 + shape.cols));
          std::vector<uint16_t> halfInput;
          std::string error;
          std::optional<QuantizedTensor> expected;
          const void *hostInput = input.data();
          size_t inputBytes = input.size() * sizeof(float);
          if (std::string(dtype) == "bf16") {
            for (float value : input)
              halfInput.push_back(floatToBFloat16(value));
            expected =
                quantizeHalf(*scheme, HalfType::BF16, halfInput, shape.rows,
                             shape.cols, StaticScales{}, &error);
            hostInput = halfInput.data();
            inputBytes = halfInput.size() * sizeof(uint16_t);
          } else {
            expected = quantize(*scheme, input, shape.rows, shape.cols, &error);
          }
          INFO(error);
          REQUIRE(expected);

          size_t width = scaleBytes(scheme->scale.type);
          auto x = DeviceBuffer::allocate(*context, inputBytes);
          auto amax = DeviceBuffer::allocate(*context, sizeof(uint32_t));
          auto codes = DeviceBuffer::allocate(*context, expected->codes.size());
          auto scales = DeviceBuffer::allocate(
              *context, expected->scaleCodes.size() * width);
          auto zeros = DeviceBuffer::allocate(
              *context, std::max<size_t>(expected->zeros.size(), 1));
          auto global = DeviceBuffer::allocate(*context, sizeof(float));
          REQUIRE((x && amax && codes && scales && zeros && global));
          REQUIRE(x->upload(hostInput, inputBytes).ok());
          uint32_t zero = 0;
          REQUIRE(amax->upload(&zero, sizeof(zero)).ok());

          long long rows = shape.rows, cols = shape.cols;
          long long count = rows * cols;
          CUdeviceptr xPointer = x->address(), amaxPointer = amax->address(),
                      codesPointer = codes->address(),
                      scalesPointer = scales->address(),
                      zerosPointer = zeros->address(),
                      globalPointer = global->address();
          if (source->needsTensorAmax) {
            void *amaxArguments[] = {&xPointer, &count, &amaxPointer};
            unsigned blocks =
                unsigned(std::min<long long>((count + 255) / 256, 1024));
            REQUIRE(
                amaxKernel->launch({blocks}, {256}, 0, nullptr, amaxArguments)
                    .ok());
          }
          void *arguments[] = {&xPointer,     &rows,         &cols,
                               &amaxPointer,  &codesPointer, &scalesPointer,
                               &zerosPointer, &globalPointer};
          int64_t threads = quantizeThreads(*source, rows, cols);
          REQUIRE(quantizeKernel
                      ->launch({unsigned((threads + 127) / 128)}, {128}, 0,
                               nullptr, arguments)
                      .ok());
          REQUIRE(api.cuCtxSynchronize() == kCudaSuccess);

          std::vector<uint8_t> gotCodes(expected->codes.size());
          std::vector<uint8_t> gotScales(expected->scaleCodes.size() * width);
          REQUIRE(codes->download(gotCodes.data(), gotCodes.size()).ok());
          REQUIRE(scales->download(gotScales.data(), gotScales.size()).ok());
          size_t codeMismatches = 0, firstCode = 0;
          for (size_t index = 0; index < gotCodes.size(); ++index)
            if (gotCodes[index] != expected->codes[index] &&
                codeMismatches++ == 0)
              firstCode = index;
          INFO("first code mismatch at byte " << firstCode);
          CHECK(codeMismatches == 0);
          size_t scaleMismatches = 0;
          for (size_t index = 0; index < expected->scaleCodes.size(); ++index)
            if (loadScaleCode(gotScales, index, width) !=
                expected->scaleCodes[index])
              ++scaleMismatches;
          CHECK(scaleMismatches == 0);
          if (!expected->zeros.empty()) {
            std::vector<uint8_t> gotZeros(expected->zeros.size());
            REQUIRE(zeros->download(gotZeros.data(), gotZeros.size()).ok());
            CHECK(gotZeros == expected->zeros);
          }
          if (scheme->scale.globalScale != GlobalScale::None) {
            float gotGlobal = 0;
            REQUIRE(global->download(&gotGlobal, sizeof(float)).ok());
            CHECK(floatBits(gotGlobal) == floatBits(expected->globalScale));
          }

          // Dequantize the expected codes and scales on the GPU and compare
          // with the CPU's dequantize (NaN compares by bits, too).
          std::optional<std::vector<float>> restored =
              dequantize(*expected, &error);
          REQUIRE(restored);
          std::vector<uint8_t> expectedScaleBytes(gotScales.size());
          for (size_t index = 0; index < expected->scaleCodes.size(); ++index)
            std::memcpy(expectedScaleBytes.data() + index * width,
                        &expected->scaleCodes[index], width);
          REQUIRE(codes->upload(expected->codes.data(), expected->codes.size())
                      .ok());
          REQUIRE(
              scales
                  ->upload(expectedScaleBytes.data(), expectedScaleBytes.size())
                  .ok());
          if (!expected->zeros.empty())
            REQUIRE(
                zeros->upload(expected->zeros.data(), expected->zeros.size())
                    .ok());
          REQUIRE(global->upload(&expected->globalScale, sizeof(float)).ok());
          auto out = DeviceBuffer::allocate(*context, size_t(count) * 4);
          REQUIRE(out.ok());
          CUdeviceptr outPointer = out->address();
          void *dequantizeArguments[] = {
              &codesPointer, &rows,          &cols,      &scalesPointer,
              &zerosPointer, &globalPointer, &outPointer};
          REQUIRE(dequantizeKernel
                      ->launch({unsigned((count + 127) / 128)}, {128}, 0,
                               nullptr, dequantizeArguments)
                      .ok());
          std::vector<float> gotValues(static_cast<size_t>(count));
          REQUIRE(out->download(gotValues.data(), gotValues.size() * 4).ok());
          size_t valueMismatches = 0;
          for (size_t index = 0; index < gotValues.size(); ++index) {
            bool bothNan =
                std::isnan(gotValues[index]) && std::isnan((*restored)[index]);
            if (!bothNan &&
                floatBits(gotValues[index]) != floatBits((*restored)[index]))
              ++valueMismatches;
          }
          CHECK(valueMismatches == 0);
        }
      }
    }
  }
}
