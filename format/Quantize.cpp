//===- Quantize.cpp - The reference quantizer -----------------------------===//
//
// Written for the reader, not for speed: one pass gathers each group's
// statistics, one picks the stored scales, one converts the elements. The
// operation order of every formula is the contract in docs/quantization.md;
// change one only together with that page and the kernels.
//
//===----------------------------------------------------------------------===//

#include "format/Quantize.h"

#include "format/Codec.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lowbit {
namespace {

constexpr float kFloatMax = std::numeric_limits<float>::max();

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

int64_t ceilDiv(int64_t value, int64_t divisor) {
  return (value + divisor - 1) / divisor;
}

/// The scale grid before any layout padding: one entry per group.
Shape2D logicalScaleShape(const Scheme &scheme, int64_t rows, int64_t cols) {
  Scheme rowMajor = scheme;
  rowMajor.scale.layout = ScaleLayout::RowMajor;
  return scaleShape(rowMajor, rows, cols);
}

/// (scale row, scale column) of element (row, col) in the logical grid.
Shape2D groupOf(const ScaleSpec &scale, int64_t row, int64_t col) {
  switch (scale.granularity) {
  case Granularity::PerTensor:
    return {0, 0};
  case Granularity::PerToken:
    return {row, 0};
  case Granularity::PerChannel:
    return scale.axis == 0 ? Shape2D{row, 0} : Shape2D{0, col};
  case Granularity::Group:
    return scale.axis == 1 ? Shape2D{row, col / scale.groupSize}
                           : Shape2D{row / scale.groupSize, col};
  case Granularity::Block:
    return {row / scale.blockRows, col / scale.blockCols};
  }
  return {0, 0};
}

/// Storage index of logical scale (scaleRow, scaleCol).
int64_t storageIndex(const Scheme &scheme, Shape2D logical, int64_t scaleRow,
                     int64_t scaleCol) {
  if (scheme.scale.layout == ScaleLayout::Swizzle128x4)
    return swizzle128x4Offset(scaleRow, scaleCol, logical.cols);
  return scaleRow * logical.cols + scaleCol;
}

/// The format of a scale type, looked up once (nullptr for f32).
const Format *scaleFormatOf(ScaleType type) {
  static const std::optional<Format> formats[] = {
      scaleTypeFormat(ScaleType::F32), scaleTypeFormat(ScaleType::F16),
      scaleTypeFormat(ScaleType::BF16), scaleTypeFormat(ScaleType::E8M0),
      scaleTypeFormat(ScaleType::UE4M3)};
  const std::optional<Format> &format = formats[size_t(type)];
  return format ? &*format : nullptr;
}

/// Every stored scale decoded once, indexed like the codes.
std::vector<float> decodeScales(const QuantizedTensor &tensor) {
  std::vector<float> values(tensor.scaleCodes.size());
  for (size_t index = 0; index < values.size(); ++index)
    values[index] =
        decodeScale(tensor.scheme.scale.type, tensor.scaleCodes[index]);
  return values;
}

uint32_t floatScaleCode(float value) {
  // Saturating like every other conversion: a scale is never inf.
  if (std::isinf(value))
    value = std::copysign(kFloatMax, value);
  return floatBits(value);
}

/// Rounds `value` to the scale type: RNE, saturating.
uint32_t encodeScale(ScaleType type, float value) {
  const Format *format = scaleFormatOf(type);
  if (!format)
    return floatScaleCode(value);
  return encode(*format, value);
}

uint32_t oneScaleCode(ScaleType type) { return encodeScale(type, 1.0f); }

/// The stored global scale, with 0 (all-zero tensor, or underflow) replaced
/// by 1 and inf (overflow) by the f32 max, so it is always finite and
/// positive.
float sanitizeGlobal(float value) {
  if (value == 0 || std::isnan(value))
    return 1.0f;
  return std::isinf(value) ? kFloatMax : value;
}

bool usableScale(float value) { return std::isfinite(value) && value > 0; }

bool isReciprocalRule(ScaleRule rule) {
  return rule == ScaleRule::AbsMaxReciprocal ||
         rule == ScaleRule::SignedMaxReciprocal;
}

/// Whether a stored scale of `rule` is one it can produce: finite and
/// positive, or for llama.cpp's rules also zero (an all-zero group) and,
/// for the signed max, negative.
bool scaleFitsRule(ScaleRule rule, float value) {
  if (rule == ScaleRule::AbsMaxReciprocal)
    return std::isfinite(value) && value >= 0;
  if (rule == ScaleRule::SignedMaxReciprocal)
    return std::isfinite(value);
  return usableScale(value);
}

struct GroupStats {
  std::vector<float> absMax, min, max;
  /// The first value of largest magnitude (0 for an empty or all-NaN
  /// group): llama.cpp's Q4_0 scale.
  std::vector<float> signedMax;
  float tensorAbsMax = 0;
};

/// amax, min and max per group. NaN is skipped (PTX max.f32 returns the
/// other operand), and every statistic starts at 0, so an all-NaN group has
/// amax 0 and min/max include 0 as the asymmetric rule wants anyway.
GroupStats gatherStats(const Scheme &scheme, std::span<const float> input,
                       int64_t rows, int64_t cols, Shape2D logical) {
  GroupStats stats;
  size_t groups = size_t(logical.rows * logical.cols);
  stats.absMax.assign(groups, 0.0f);
  stats.min.assign(groups, 0.0f);
  stats.max.assign(groups, 0.0f);
  stats.signedMax.assign(groups, 0.0f);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col) {
      float value = input[size_t(row * cols + col)];
      if (std::isnan(value))
        continue;
      Shape2D group = groupOf(scheme.scale, row, col);
      size_t index = size_t(group.rows * logical.cols + group.cols);
      float magnitude = std::fabs(value);
      if (magnitude > stats.absMax[index])
        stats.signedMax[index] = value;
      stats.absMax[index] = std::max(stats.absMax[index], magnitude);
      stats.min[index] = std::min(stats.min[index], value);
      stats.max[index] = std::max(stats.max[index], value);
      stats.tensorAbsMax = std::max(stats.tensorAbsMax, magnitude);
    }
  return stats;
}

/// The per-tensor scale of a two-level scheme: qmax (of the element) times
/// the largest block scale, as an f32 (6 * 448 = 2688 for NVFP4).
float globalDenominator(const Scheme &scheme) {
  double product =
      quantMax(scheme) * scaleTypeFormat(scheme.scale.type)->maxValue();
  return float(std::min(product, double(kFloatMax)));
}

float computeGlobal(const Scheme &scheme, float tensorAbsMax) {
  float denominator = globalDenominator(scheme);
  if (scaleKindOf(scheme) == ScaleKind::GlobalDecode)
    return sanitizeGlobal(tensorAbsMax / denominator);
  if (tensorAbsMax == 0)
    return 1.0f;
  return sanitizeGlobal(denominator / tensorAbsMax);
}

/// The unrounded f32 scale of llama.cpp's rules: amax / qmax, or the signed
/// max / -2^(b-1).
float reciprocalRuleScale(const Scheme &scheme, float absMax, float signedMax) {
  float qmax = float(quantMax(scheme));
  if (scheme.scale.rule == ScaleRule::AbsMaxReciprocal)
    return absMax / qmax;
  return signedMax / -(qmax + 1);
}

/// llama.cpp's code of `value` against the unrounded scale `d`, as a
/// signed integer: x * (1 / d) (1 / d is 0 when d is 0), then roundf
/// (Q8_0) or trunc(+ 2^(b-1) + 0.5) clamped to 2^b - 1, less 2^(b-1)
/// (Q4_0). NaN gives the zero code.
int reciprocalRuleCode(const Scheme &scheme, float value, float d) {
  float reciprocal = d != 0 ? 1.0f / d : 0.0f;
  float scaled = value * reciprocal;
  int qmax = int(quantMax(scheme));
  if (std::isnan(scaled))
    return 0;
  if (scheme.scale.rule == ScaleRule::AbsMaxReciprocal)
    return int(std::clamp(std::round(scaled), -float(qmax) - 1, float(qmax)));
  // Two f32 operations, as the reference: the product is rounded before
  // the offset is added (no multiply-add: format/CMakeLists.txt).
  float shifted = scaled + (float(qmax + 1) + 0.5f);
  float truncated = std::clamp(std::trunc(shifted), 0.0f, float(2 * qmax + 1));
  return int(truncated) - (qmax + 1);
}

/// The dynamic stored scale code of one group.
uint32_t pickScaleCode(const Scheme &scheme, float absMax, float min, float max,
                       float signedMax, float global) {
  const ScaleSpec &spec = scheme.scale;
  float qmax = float(quantMax(scheme));
  switch (spec.rule) {
  case ScaleRule::AbsMaxReciprocal:
  case ScaleRule::SignedMaxReciprocal:
    // No zero-scale replacement: llama.cpp stores d = 0.
    return encodeScale(spec.type,
                       reciprocalRuleScale(scheme, absMax, signedMax));
  case ScaleRule::E8M0Floor: {
    if (absMax == 0)
      return 0; // 2^-127
    int exponent = std::isinf(absMax) ? 127 + elementEmax(scheme.element)
                                      : std::ilogb(absMax);
    int k = std::clamp(exponent - elementEmax(scheme.element), -127, 127);
    return uint32_t(k + 127);
  }
  case ScaleRule::E8M0RCeil: {
    // The smallest power of two >= amax / max: e8m0 rounding up. encode
    // also clamps: 0 and tiny ratios give 0x00, huge ones 0xFE.
    EncodeOptions roundUp;
    roundUp.rounding = Rounding::TowardPosInf;
    return encode(*scaleFormatOf(ScaleType::E8M0), absMax / qmax, roundUp);
  }
  case ScaleRule::MinMax: {
    float low = std::min(min, 0.0f), high = std::max(max, 0.0f);
    uint32_t code = encodeScale(spec.type, (high - low) / qmax);
    return decodeScale(spec.type, code) == 0 ? oneScaleCode(spec.type) : code;
  }
  case ScaleRule::AbsMax:
    break;
  }
  ScaleKind kind = scaleKindOf(scheme);
  if (kind == ScaleKind::GlobalDecode || kind == ScaleKind::GlobalEncode) {
    const Format &scaleFormat = *scaleFormatOf(spec.type);
    float scaleMin =
        float(scaleFormat.hasSubnormals() ? scaleFormat.minSubnormal()
                                          : scaleFormat.minNormal());
    float scaleMax = float(scaleFormat.maxValue());
    float wanted = kind == ScaleKind::GlobalDecode ? absMax / qmax / global
                                                   : absMax / qmax * global;
    return encode(scaleFormat, std::clamp(wanted, scaleMin, scaleMax));
  }
  uint32_t code = encodeScale(spec.type, absMax / qmax);
  return decodeScale(spec.type, code) == 0 ? oneScaleCode(spec.type) : code;
}

uint8_t pickZero(float low, float scale, int levels) {
  float zero = std::rint(-std::min(low, 0.0f) / scale);
  return uint8_t(std::clamp(zero, 0.0f, float(levels)));
}

/// clamp(rne(x / s) + zero, 0, levels); NaN gives rne 0 (cvt.rni.sat).
uint32_t quantizeAsymmetric(float value, float scale, int zero, int levels) {
  float rounded = std::rint(value / scale);
  if (std::isnan(rounded))
    rounded = 0;
  // Clamping first keeps the int conversion defined; it cannot change the
  // result because 0 <= zero <= levels.
  rounded = std::clamp(rounded, -float(levels) - 1, float(levels) + 1);
  return uint32_t(std::clamp(int(rounded) + zero, 0, levels));
}

int asymmetricLevels(const Scheme &scheme) { return int(quantMax(scheme)); }

void storeCode(QuantizedTensor &tensor, int64_t row, int64_t col,
               uint32_t code) {
  CodePosition position = codePosition(tensor.scheme, tensor.cols, row, col);
  if (isNibblePacked(tensor.scheme.packing)) {
    tensor.codes[size_t(position.byte)] |=
        uint8_t((code & 0xF) << position.shift);
    return;
  }
  tensor.codes[size_t(position.byte)] = uint8_t(code);
}

/// Copies static scales into `tensor`, checking their sizes.
bool takeStaticScales(QuantizedTensor &tensor, const StaticScales &given,
                      std::string *error) {
  const Scheme &scheme = tensor.scheme;
  if (!given.scaleCodes) {
    setError(error, "a static scheme needs its scales");
    return false;
  }
  tensor.scaleCodes = *given.scaleCodes;
  if (scheme.scale.zeroPoint) {
    if (!given.zeros) {
      setError(error, "a static scheme with a zero point needs its zero "
                      "points");
      return false;
    }
    tensor.zeros = *given.zeros;
  } else if (given.zeros) {
    setError(error, "zero points were given but the scheme has none");
    return false;
  }
  if (scheme.scale.globalScale != GlobalScale::None) {
    if (!given.globalScale) {
      setError(error, "a static scheme with a second-level scale needs its "
                      "global scale");
      return false;
    }
    tensor.globalScale = *given.globalScale;
  } else if (given.globalScale) {
    setError(error, "a global scale was given but the scheme has none");
    return false;
  }
  return true;
}

} // namespace

ScaleKind scaleKindOf(const Scheme &scheme) {
  if (scheme.scale.zeroPoint)
    return ScaleKind::Asymmetric;
  switch (scheme.scale.globalScale) {
  case GlobalScale::DecodeMultiplier:
    return ScaleKind::GlobalDecode;
  case GlobalScale::EncodeReciprocal:
    return ScaleKind::GlobalEncode;
  case GlobalScale::None:
    break;
  }
  return ScaleKind::Symmetric;
}

float decodeScale(ScaleType type, uint32_t code) {
  switch (type) {
  case ScaleType::F32:
    return bitsToFloat(code);
  case ScaleType::F16:
    return halfToFloat(uint16_t(code));
  case ScaleType::BF16:
    return bfloat16ToFloat(uint16_t(code));
  case ScaleType::E8M0:
  case ScaleType::UE4M3:
    return scaleFormatOf(type)->decodeToFloat(code);
  }
  return 0;
}

int scaleStorageBits(ScaleType type) {
  switch (type) {
  case ScaleType::F32:
    return 32;
  case ScaleType::F16:
  case ScaleType::BF16:
    return 16;
  case ScaleType::E8M0:
  case ScaleType::UE4M3:
    return 8;
  }
  return 0;
}

int64_t swizzle128x4Offset(int64_t row, int64_t scaleCol, int64_t scaleCols) {
  int64_t tilesPerRow = ceilDiv(scaleCols, 4);
  return ((row / 128) * tilesPerRow + scaleCol / 4) * 512 + (row % 32) * 16 +
         ((row / 32) % 4) * 4 + scaleCol % 4;
}

int64_t scaleIndexOf(const Scheme &scheme, int64_t rows, int64_t cols,
                     int64_t row, int64_t col) {
  Shape2D logical = logicalScaleShape(scheme, rows, cols);
  Shape2D group = groupOf(scheme.scale, row, col);
  return storageIndex(scheme, logical, group.rows, group.cols);
}

CodePosition codePosition(const Scheme &scheme, int64_t cols, int64_t row,
                          int64_t col) {
  switch (scheme.packing) {
  case Packing::Byte:
    return {row * cols + col, 0};
  case Packing::Nibble:
    return {row * ceilDiv(cols, 2) + col / 2, 4 * int(col % 2)};
  case Packing::NibbleHalves: {
    // Whole groups of g (validateSchemeForShape): byte j of a group holds
    // elements j and j + g/2.
    int64_t half = scheme.scale.groupSize / 2;
    int64_t inGroup = col % (2 * half);
    return {row * (cols / 2) + (col / (2 * half)) * half + inGroup % half,
            inGroup < half ? 0 : 4};
  }
  }
  return {};
}

uint32_t codeAt(const QuantizedTensor &tensor, int64_t row, int64_t col) {
  CodePosition position = codePosition(tensor.scheme, tensor.cols, row, col);
  uint8_t byte = tensor.codes[size_t(position.byte)];
  if (isNibblePacked(tensor.scheme.packing))
    return (byte >> position.shift) & 0xF;
  return byte;
}

std::vector<float> widenToFloat(HalfType type, std::span<const uint16_t> bits) {
  std::vector<float> values(bits.size());
  for (size_t index = 0; index < bits.size(); ++index)
    values[index] = type == HalfType::F16 ? halfToFloat(bits[index])
                                          : bfloat16ToFloat(bits[index]);
  return values;
}

bool validateQuantized(const QuantizedTensor &tensor, std::string *error) {
  const Scheme &scheme = tensor.scheme;
  if (!validateSchemeForShape(scheme, tensor.rows, tensor.cols, error))
    return false;
  if (tensor.rows <= 0 || tensor.cols <= 0) {
    setError(error, "the tensor is empty (" + std::to_string(tensor.rows) +
                        "x" + std::to_string(tensor.cols) + ")");
    return false;
  }
  auto checkCount = [&](size_t have, Shape2D want, const char *what) {
    if (have == size_t(want.rows * want.cols))
      return true;
    setError(error, std::string(what) + " has " + std::to_string(have) +
                        " entries, the scheme needs " +
                        std::to_string(want.rows) + "x" +
                        std::to_string(want.cols));
    return false;
  };
  Shape2D scales = scaleShape(scheme, tensor.rows, tensor.cols);
  if (!checkCount(tensor.codes.size(),
                  codesShape(scheme, tensor.rows, tensor.cols), "codes") ||
      !checkCount(tensor.scaleCodes.size(), scales, "scales"))
    return false;
  if (scheme.scale.zeroPoint
          ? !checkCount(tensor.zeros.size(), scales, "zero points")
          : !tensor.zeros.empty()) {
    if (!scheme.scale.zeroPoint)
      setError(error, "zero points were given but the scheme has none");
    return false;
  }
  if (scheme.scale.globalScale != GlobalScale::None &&
      !usableScale(tensor.globalScale)) {
    setError(error, "the global scale must be finite and positive, got " +
                        std::to_string(tensor.globalScale));
    return false;
  }

  uint32_t codeLimit = scheme.scale.type == ScaleType::F32
                           ? 0xFFFFFFFFu
                           : scaleTypeFormat(scheme.scale.type)->codeMask();
  int levels = asymmetricLevels(scheme);
  Shape2D logical = logicalScaleShape(scheme, tensor.rows, tensor.cols);
  for (int64_t scaleRow = 0; scaleRow < logical.rows; ++scaleRow)
    for (int64_t scaleCol = 0; scaleCol < logical.cols; ++scaleCol) {
      size_t index = size_t(storageIndex(scheme, logical, scaleRow, scaleCol));
      uint32_t code = tensor.scaleCodes[index];
      float value = decodeScale(scheme.scale.type, code);
      std::string where = "scale [" + std::to_string(scaleRow) + ", " +
                          std::to_string(scaleCol) + "]";
      if (code > codeLimit) {
        setError(error, where + " code " + std::to_string(code) +
                            " does not fit in " +
                            std::string(scaleTypeName(scheme.scale.type)));
        return false;
      }
      if (!scaleFitsRule(scheme.scale.rule, value)) {
        setError(error, where + " must be finite and " +
                            (scheme.scale.rule == ScaleRule::SignedMaxReciprocal
                                 ? std::string("")
                             : scheme.scale.rule == ScaleRule::AbsMaxReciprocal
                                 ? std::string("not negative")
                                 : std::string("positive")) +
                            ", got " + std::to_string(value));
        return false;
      }
      if (scheme.scale.zeroPoint && tensor.zeros[index] > levels) {
        setError(error, "zero point [" + std::to_string(scaleRow) + ", " +
                            std::to_string(scaleCol) + "] is " +
                            std::to_string(tensor.zeros[index]) +
                            ", above the largest code " +
                            std::to_string(levels));
        return false;
      }
    }
  return true;
}

std::optional<QuantizedTensor>
quantize(const Scheme &scheme, std::span<const float> input, int64_t rows,
         int64_t cols, const StaticScales &given, std::string *error) {
  if (!validateSchemeForShape(scheme, rows, cols, error))
    return std::nullopt;
  if (rows <= 0 || cols <= 0) {
    setError(error, "the tensor is empty (" + std::to_string(rows) + "x" +
                        std::to_string(cols) + ")");
    return std::nullopt;
  }
  if (input.size() != size_t(rows * cols)) {
    setError(error, "the input has " + std::to_string(input.size()) +
                        " values, a " + std::to_string(rows) + "x" +
                        std::to_string(cols) + " tensor needs " +
                        std::to_string(rows * cols));
    return std::nullopt;
  }

  QuantizedTensor tensor(scheme);
  tensor.rows = rows;
  tensor.cols = cols;
  Shape2D codes = codesShape(scheme, rows, cols);
  tensor.codes.assign(size_t(codes.rows * codes.cols), 0);
  Shape2D logical = logicalScaleShape(scheme, rows, cols);
  Shape2D stored = scaleShape(scheme, rows, cols);
  ScaleKind kind = scaleKindOf(scheme);
  int levels = asymmetricLevels(scheme);

  // llama.cpp's rules quantize against the f32 scale before it is rounded
  // to the scale type; static scales are their own.
  std::vector<float> unroundedScales;
  if (scheme.scale.mode == ScaleMode::Static) {
    if (!takeStaticScales(tensor, given, error))
      return std::nullopt;
  } else {
    if (given.scaleCodes || given.zeros) {
      setError(error, "scales were given but the scheme is dynamic");
      return std::nullopt;
    }
    GroupStats stats = gatherStats(scheme, input, rows, cols, logical);
    if (scheme.scale.globalScale != GlobalScale::None)
      tensor.globalScale = given.globalScale
                               ? *given.globalScale
                               : computeGlobal(scheme, stats.tensorAbsMax);
    else if (given.globalScale) {
      setError(error, "a global scale was given but the scheme has none");
      return std::nullopt;
    }
    // Padding of the swizzled layout stays zero.
    tensor.scaleCodes.assign(size_t(stored.rows * stored.cols), 0);
    if (isReciprocalRule(scheme.scale.rule))
      unroundedScales.assign(tensor.scaleCodes.size(), 0.0f);
    if (scheme.scale.zeroPoint)
      tensor.zeros.assign(size_t(stored.rows * stored.cols), 0);
    for (int64_t scaleRow = 0; scaleRow < logical.rows; ++scaleRow)
      for (int64_t scaleCol = 0; scaleCol < logical.cols; ++scaleCol) {
        size_t group = size_t(scaleRow * logical.cols + scaleCol);
        size_t index =
            size_t(storageIndex(scheme, logical, scaleRow, scaleCol));
        uint32_t code = pickScaleCode(
            scheme, stats.absMax[group], stats.min[group], stats.max[group],
            stats.signedMax[group], tensor.globalScale);
        if (isReciprocalRule(scheme.scale.rule))
          unroundedScales[index] = reciprocalRuleScale(
              scheme, stats.absMax[group], stats.signedMax[group]);
        tensor.scaleCodes[index] = code;
        if (scheme.scale.zeroPoint)
          tensor.zeros[index] = pickZero(
              stats.min[group], decodeScale(scheme.scale.type, code), levels);
      }
  }
  // Static scales are checked here; dynamic ones are correct by
  // construction, but the check is cheap and guards the rules above.
  if (!validateQuantized(tensor, error))
    return std::nullopt;

  Codec codec(scheme.element);
  std::vector<float> scaleValues = decodeScales(tensor);
  if (isReciprocalRule(scheme.scale.rule) && unroundedScales.empty())
    unroundedScales = scaleValues;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col) {
      float value = input[size_t(row * cols + col)];
      Shape2D group = groupOf(scheme.scale, row, col);
      size_t index =
          size_t(storageIndex(scheme, logical, group.rows, group.cols));
      float scale = scaleValues[index];
      uint32_t code = 0;
      if (isReciprocalRule(scheme.scale.rule)) {
        // Two's complement in the element's bits.
        code = uint32_t(
                   reciprocalRuleCode(scheme, value, unroundedScales[index])) &
               scheme.element.codeMask();
        storeCode(tensor, row, col, code);
        continue;
      }
      switch (kind) {
      case ScaleKind::Symmetric:
        code = codec.encode(value / scale);
        break;
      case ScaleKind::Asymmetric:
        code = quantizeAsymmetric(value, scale, tensor.zeros[index], levels);
        break;
      case ScaleKind::GlobalDecode:
        code = codec.encode(value / (scale * tensor.globalScale));
        break;
      case ScaleKind::GlobalEncode:
        code = codec.encode(value * tensor.globalScale / scale);
        break;
      }
      storeCode(tensor, row, col, code);
    }
  return tensor;
}

std::optional<QuantizedTensor> quantizeHalf(const Scheme &scheme, HalfType type,
                                            std::span<const uint16_t> input,
                                            int64_t rows, int64_t cols,
                                            const StaticScales &given,
                                            std::string *error) {
  std::vector<float> widened = widenToFloat(type, input);
  return quantize(scheme, widened, rows, cols, given, error);
}

std::optional<std::vector<float>> dequantize(const QuantizedTensor &tensor,
                                             std::string *error) {
  if (!validateQuantized(tensor, error))
    return std::nullopt;
  const Scheme &scheme = tensor.scheme;
  Shape2D logical = logicalScaleShape(scheme, tensor.rows, tensor.cols);
  ScaleKind kind = scaleKindOf(scheme);
  const Format &element = scheme.element;
  std::vector<float> output(size_t(tensor.rows * tensor.cols));
  std::vector<float> scaleValues = decodeScales(tensor);
  Codec codec(element);
  for (int64_t row = 0; row < tensor.rows; ++row)
    for (int64_t col = 0; col < tensor.cols; ++col) {
      Shape2D group = groupOf(scheme.scale, row, col);
      size_t index =
          size_t(storageIndex(scheme, logical, group.rows, group.cols));
      float scale = scaleValues[index];
      uint32_t code = codeAt(tensor, row, col);
      float value = 0;
      switch (kind) {
      case ScaleKind::Symmetric:
        value = codec.decode(code) * scale;
        break;
      case ScaleKind::Asymmetric:
        value =
            float(int(code & element.codeMask()) - int(tensor.zeros[index])) *
            scale;
        break;
      case ScaleKind::GlobalDecode:
        value = codec.decode(code) * (scale * tensor.globalScale);
        break;
      case ScaleKind::GlobalEncode:
        value = codec.decode(code) * scale / tensor.globalScale;
        break;
      }
      output[size_t(row * tensor.cols + col)] = value;
    }
  return output;
}

std::optional<std::vector<uint16_t>>
dequantizeHalf(const QuantizedTensor &tensor, HalfType type,
               std::string *error) {
  std::optional<std::vector<float>> values = dequantize(tensor, error);
  if (!values)
    return std::nullopt;
  // A NaN result (0 * inf of an overflowing scale, a NaN code) becomes the
  // canonical NaN 0x7fff of both types, whatever its sign: what the GPU's
  // cvt.rn.f16.f32 / cvt.rn.bf16.f32 and CUDA's host __float2half_rn /
  // __float2bfloat16_rn give, and what every backend writes
  // (docs/numerics.md).
  constexpr uint16_t kCanonicalNaN = 0x7fff;
  std::vector<uint16_t> bits(values->size());
  for (size_t index = 0; index < bits.size(); ++index) {
    float value = (*values)[index];
    bits[index] = std::isnan(value)       ? kCanonicalNaN
                  : type == HalfType::F16 ? floatToHalf(value)
                                          : floatToBFloat16(value);
  }
  return bits;
}

int64_t storageBits(const QuantizedTensor &tensor) {
  int64_t bits = int64_t(tensor.codes.size()) * 8 +
                 int64_t(tensor.scaleCodes.size()) *
                     scaleStorageBits(tensor.scheme.scale.type) +
                 int64_t(tensor.zeros.size()) * tensor.scheme.element.bits();
  if (tensor.scheme.scale.globalScale != GlobalScale::None)
    bits += 32;
  return bits;
}

} // namespace lowbit
