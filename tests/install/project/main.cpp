// An engine using the installed MLIR-free core: the reference quantizer and
// .npy I/O. Exits non-zero unless the known MXFP4 codes come out.
#include "format/Quantize.h"
#include "lowbit/Expected.h"
#include "runtime/core/Npy.h"

#include <cstdio>
#include <vector>

int main() {
  std::string error;
  std::optional<lowbit::Scheme> scheme = lowbit::lookupScheme("mxfp4", &error);
  if (!scheme) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6 are e2m1 codes 0-7; amax 6 gives scale 2^0.
  const float values[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  std::vector<float> input;
  for (int i = 0; i < 32; ++i)
    input.push_back((i / 8) % 2 ? -values[i % 8] : values[i % 8]);
  auto tensor = lowbit::quantize(*scheme, input, 1, 32, &error);
  if (!tensor) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const uint8_t expected[4] = {0x10, 0x32, 0x98, 0xba};
  if (tensor->codes[0] != expected[0] || tensor->codes[1] != expected[1] ||
      tensor->codes[4] != expected[2] || tensor->codes[5] != expected[3] ||
      tensor->scaleCodes[0] != 127) {
    std::fprintf(stderr, "unexpected codes\n");
    return 1;
  }
  auto npy = lowbit::npy::serializeNpy(
      lowbit::npy::Array::fromValues<uint8_t>(lowbit::npy::DType::U8, {1, 16},
                                              tensor->codes),
      &error);
  if (!npy) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  lowbit::Status status = lowbit::makeError(lowbit::ErrorCode::Io, "example");
  std::printf("consumer: mxfp4 codes %02x %02x, scale code %u, npy %zu bytes, "
              "%s\n",
              tensor->codes[0], tensor->codes[1], tensor->scaleCodes[0],
              npy->size(),
              std::string(lowbit::errorCodeName(status.error().code)).c_str());
  return 0;
}
