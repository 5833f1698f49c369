//===- MatmulSignature.cpp - The matmul kernel's parameter list -----------===//

#include "runtime/compiler/MatmulSignature.h"

#include "format/Scheme.h"
#include "matmul/MatmulPrologues.h"

namespace lowbit::compiler {

namespace {

/// The element type name of a stored scale (memrefTypeOf's names): the
/// float types as themselves, e8m0 and ue4m3 codes as bytes.
std::string scaleElementName(ScaleType type) {
  if (type == ScaleType::E8M0 || type == ScaleType::UE4M3)
    return "i8";
  return std::string(scaleTypeName(type));
}

/// A static size, or `dim` where the spec leaves it to the call.
int64_t sizeOr(int64_t size, CallDim dim) {
  return size == kDynamic ? int64_t(dim) : size;
}

} // namespace

std::vector<KvKernelParam> matmulParams(const matmul::MatmulSpec &spec) {
  const Scheme &scheme = spec.scheme;
  int64_t n = sizeOr(spec.n, kMatmulCols), k = sizeOr(spec.k, kMatmulDepth);
  Shape2D codes = codesShape(scheme, spec.n, spec.k);
  Shape2D scales = scaleShape(scheme, spec.n, spec.k);
  std::vector<int64_t> scaleDims = {sizeOr(scales.rows, kMatmulScaleRows),
                                    sizeOr(scales.cols, kMatmulScaleCols)};
  std::vector<KvKernelParam> params;
  params.push_back(
      {"x", std::string(valueTypeName(spec.input)), {kMatmulRows, k}, false});
  // The prologues' side tensors (docs/fusion.md), [1, K] in X's dtype.
  for (std::string &name : matmul::matmulSideInputNames(spec.prologues))
    params.push_back({std::move(name),
                      std::string(valueTypeName(spec.input)),
                      {1, k},
                      false});
  params.push_back(
      {"codes", "i8", {n, sizeOr(codes.cols, kMatmulCodeCols)}, false});
  params.push_back(
      {"scales", scaleElementName(scheme.scale.type), scaleDims, false});
  if (scheme.scale.zeroPoint)
    params.push_back({"zeros", "i8", scaleDims, false});
  if (scheme.scale.globalScale != GlobalScale::None)
    params.push_back({"global", "f32", {1, 1}, false});
  if (spec.bias)
    params.push_back({"bias", "f32", {1, n}, false});
  params.push_back(
      {"y", std::string(valueTypeName(spec.output)), {kMatmulRows, n}, true});
  return params;
}

std::vector<std::array<int64_t, 2>> matmulShapes(const matmul::MatmulSpec &spec,
                                                 const MatmulSizes &sizes) {
  Shape2D codes = codesShape(spec.scheme, sizes.n, sizes.k);
  Shape2D scales = scaleShape(spec.scheme, sizes.n, sizes.k);
  CallSizes callSizes = {
      {kMatmulRows, sizes.m},          {kMatmulCols, sizes.n},
      {kMatmulDepth, sizes.k},         {kMatmulCodeCols, codes.cols},
      {kMatmulScaleRows, scales.rows}, {kMatmulScaleCols, scales.cols}};
  std::vector<std::array<int64_t, 2>> shapes;
  for (const KvKernelParam &param : matmulParams(spec)) {
    std::vector<int64_t> shape = bindShape(param, callSizes);
    shapes.push_back({shape[0], shape[1]});
  }
  return shapes;
}

std::optional<MatmulSizes>
matmulSizesOf(const matmul::MatmulSpec &spec,
              const std::vector<std::array<int64_t, 2>> &shapes,
              std::string *error) {
  std::vector<KvKernelParam> params = matmulParams(spec);
  auto fail = [&](std::string message) -> std::optional<MatmulSizes> {
    if (error)
      *error = std::move(message);
    return std::nullopt;
  };
  if (shapes.size() != params.size())
    return fail("the matmul kernel takes " + std::to_string(params.size()) +
                " buffers, got " + std::to_string(shapes.size()));
  MatmulSizes sizes{shapes.front()[0], shapes.back()[1], shapes.front()[1]};
  if (sizes.m < 0 || sizes.n < 1 || sizes.k < 1)
    return fail("x [M, K] and y [M, N] need K >= 1 and N >= 1, got x [" +
                std::to_string(sizes.m) + ", " + std::to_string(sizes.k) +
                "] and y [" + std::to_string(shapes.back()[0]) + ", " +
                std::to_string(sizes.n) + "]");
  if (spec.k != kDynamic && sizes.k != spec.k)
    return fail("x has K = " + std::to_string(sizes.k) + " columns; the " +
                "spec's weights have k=" + std::to_string(spec.k));
  if (spec.n != kDynamic && sizes.n != spec.n)
    return fail("y has N = " + std::to_string(sizes.n) + " columns; the " +
                "spec's weights have n=" + std::to_string(spec.n));
  std::string shapeError;
  if (!matmul::validateMatmulShape(spec, sizes.n, sizes.k, &shapeError))
    return fail(shapeError);
  std::vector<std::array<int64_t, 2>> expected = matmulShapes(spec, sizes);
  for (size_t index = 0; index < shapes.size(); ++index)
    if (shapes[index] != expected[index])
      return fail(params[index].name + " is [" +
                  std::to_string(shapes[index][0]) + ", " +
                  std::to_string(shapes[index][1]) + "]; x [M, K] = [" +
                  std::to_string(sizes.m) + ", " + std::to_string(sizes.k) +
                  "] and y's N = " + std::to_string(sizes.n) + " make it [" +
                  std::to_string(expected[index][0]) + ", " +
                  std::to_string(expected[index][1]) + "]");
  return sizes;
}

} // namespace lowbit::compiler
