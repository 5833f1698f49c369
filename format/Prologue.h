//===- Prologue.h - The arithmetic fused in front of quantize ----*- C++
//-*-===//
//
// A prologue transforms a [rows, width] f32 tensor before it is quantized:
// RMSNorm, residual add + RMSNorm, SiLU-and-mul, SmoothQuant, a Hadamard
// rotation, or a user's elementwise expression. This is the reference the
// fused kernels are compared with bit for bit, so every f32 operation and
// its order is fixed here and written down in docs/fusion.md. All
// arithmetic is f32 with IEEE round to nearest even, no fused multiply-add
// (the file is built with -ffp-contract=off).
//
// Plain C++ like the rest of format/: the spec parser, the lowering and the
// tests ask this one model.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FORMAT_PROLOGUE_H
#define LOWBIT_FORMAT_PROLOGUE_H

#include "format/Quantize.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit {

enum class PrologueKind : uint8_t {
  RmsNorm,    ///< y = x * (1 / sqrt(mean(x^2) + eps)) * weight
  AddRmsNorm, ///< h = x + residual (stored), y = RmsNorm(h)
  SiluMul,    ///< y = silu(x[:, :D]) * x[:, D:], width 2D -> D
  Smooth,     ///< y = x / smooth[c]
  Hadamard,   ///< y = H_B v / sqrt(B) for each block v of B columns
  Map,        ///< y = expr(x), elementwise
};

/// A node of an elementwise expression over `x` (the `map(...)` prologue).
struct PrologueExpr {
  enum class Op : uint8_t {
    X,        ///< the element
    Constant, ///< an f32 literal
    Neg,
    Add,
    Sub,
    Mul,
    Div,
    Min, ///< NaN-propagating (PTX min.NaN, arith.minimumf)
    Max, ///< NaN-propagating (arith.maximumf)
    Abs,
    Sqrt,
    Exp,     ///< lowbit's exp (prologueExp), not libm's
    Silu,    ///< x / (1 + exp(-x))
    Sigmoid, ///< 1 / (1 + exp(-x))
  };
  Op op = Op::X;
  float value = 0; ///< Constant
  std::vector<PrologueExpr> operands;
  bool operator==(const PrologueExpr &other) const = default;
};

struct Prologue {
  PrologueKind kind = PrologueKind::RmsNorm;
  /// RmsNorm, AddRmsNorm: added to the mean square.
  float eps = 1e-6f;
  /// Hadamard: the block size (a power of two, 16..4096), or 0 for the
  /// whole row (whose width must then be such a power of two).
  int64_t block = 0;
  /// Map: the expression and its text as written (printed back verbatim).
  PrologueExpr expr;
  std::string exprText;
  bool operator==(const Prologue &other) const = default;
};

/// The dtype of the values a kernel reads (and of its side vectors):
/// nullopt is f32.
using ValueDtype = std::optional<HalfType>;

/// The side tensors of one prologue, as f32 (widened exactly from the
/// kernel's dtype). weight and smooth are [cols] vectors; residual is
/// [rows, cols]. Unused ones are empty.
struct PrologueOperands {
  std::span<const float> weight, residual, smooth;
};

/// The side tensors a prologue reads, in ABI order.
enum class PrologueOperand : uint8_t { Weight, Residual, Smooth };
std::vector<PrologueOperand> prologueOperands(PrologueKind kind);
/// Binds side tensors to the chain's prologues: `sides` holds every
/// prologue's side tensors in chain order, each in prologueOperands order (as
/// kernelAbi lists them). The spans point into `sides`. A tensor `sides` lacks
/// stays empty, which quantizeFused refuses with the operand's name.
std::vector<PrologueOperands>
bindPrologueOperands(std::span<const Prologue> chain,
                     std::span<const std::vector<float>> sides);
/// Whether the prologue also writes a tensor (AddRmsNorm: the updated
/// residual, [rows, cols] in the kernel's dtype).
bool prologueWritesResidual(PrologueKind kind);

std::string_view prologueName(PrologueKind kind);

/// The input width a prologue chain needs to produce `cols` columns
/// (SiluMul reads 2 * cols).
int64_t prologueInputWidth(std::span<const Prologue> chain, int64_t cols);

/// Checks a chain for a [rows, cols] output: SiluMul only first, Hadamard
/// blocks that divide the width, eps finite and >= 0. Names what is wrong.
bool validatePrologueChain(std::span<const Prologue> chain, int64_t cols,
                           std::string *error);

/// Parses one prologue's text: `rmsnorm`, `rmsnorm(eps=1e-5)`,
/// `add_rmsnorm(eps=1e-5)`, `silu_mul`, `smooth`, `hadamard(128)`,
/// `hadamard(row)`, `map(x * 0.5 + 1)`. Errors name the offending token.
std::optional<Prologue> parsePrologue(std::string_view text,
                                      std::string *error = nullptr);
/// Takes the prologue chain off the front of a spec's text: splits `text`
/// at top-level '|', parses every part but the last as one prologue token
/// (at most kMaxPrologues) and leaves the last part (the kernel op) in
/// `text`. The one prologue grammar of the quantize and matmul specs.
bool takePrologueChain(std::string_view &text,
                       std::vector<Prologue> &prologues, std::string *error);
/// The canonical text (parsePrologue reads it back to an equal prologue).
std::string printPrologue(const Prologue &prologue);

/// prologueExp's f32 constants (exact as written, docs/fusion.md); the
/// lowering emits the same sequence with them.
struct PrologueExpConstants {
  static constexpr float kLowest = -104.0f, kHighest = 89.0f;
  /// log2(e), and ln(2) split into 12 high bits and the rest.
  static constexpr float kLog2E = 0x1.715476p+0f;
  static constexpr float kLn2High = 0x1.62e4p-1f;
  static constexpr float kLn2Low = 0x1.7f7d1cp-20f;
  /// Horner, highest first: 1/720, 1/120, 1/24, 1/6, 1/2, 1, 1.
  static constexpr std::array<float, 7> kCoefficients = {0x1.6c16c2p-10f,
                                                         0x1.111112p-7f,
                                                         0x1.555556p-5f,
                                                         0x1.555556p-3f,
                                                         0.5f,
                                                         1.0f,
                                                         1.0f};
};

/// RMSNorm's sum of squares runs in 32 strided partial sums and a halving
/// tree (docs/fusion.md): the order one warp computes.
constexpr size_t kRowSumLanes = 32;

/// lowbit's f32 exp: a fixed sequence of f32 operations (docs/fusion.md),
/// so the reference, the CPU kernels and the GPU kernels agree bit for bit.
float prologueExp(float x);
float prologueSilu(float x);
/// The expression's value at `x`, in f32.
float evaluateExpr(const PrologueExpr &expr, float x);
/// The f32 factor 1 / sqrt(B) the Hadamard rotation multiplies by.
float hadamardScale(int64_t block);
/// Rounds an f32 to the dtype and back (RNE; identity for f32).
float roundToDtype(ValueDtype dtype, float value);

/// Applies one prologue to `values` ([rows, width] row-major f32; width is
/// the prologue's input width) and returns the [rows, outWidth] result.
/// `residualOut` receives AddRmsNorm's updated residual, rounded to
/// `dtype` and widened back, [rows, cols].
std::optional<std::vector<float>>
applyPrologue(const Prologue &prologue, std::span<const float> values,
              int64_t rows, int64_t width, const PrologueOperands &operands,
              ValueDtype dtype, std::vector<float> *residualOut,
              std::string *error);

/// A whole fused kernel: the chain (operands[i] for chain[i]), then the
/// reference quantizer. `input` is [rows, prologueInputWidth(chain, cols)].
/// residualOut gets the last AddRmsNorm's updated residual.
std::optional<QuantizedTensor>
quantizeFused(const Scheme &scheme, std::span<const Prologue> chain,
              std::span<const PrologueOperands> operands,
              std::span<const float> input, int64_t rows, int64_t cols,
              ValueDtype dtype, const StaticScales &given,
              std::vector<float> *residualOut, std::string *error);

} // namespace lowbit

#endif // LOWBIT_FORMAT_PROLOGUE_H
