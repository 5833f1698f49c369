//===- SchemeText.h - A scheme and spec tokens, as text ---------*- C++ -*-===//
//
// The one text form of a scheme, shared by every spec grammar (the kernel
// spec, the matmul spec): a named scheme (mxfp4, nvfp4, ...) or the compact
// form
//   scheme(format=e2m1,scale=group(32;axis=1),tail=true,type=e8m0,
//          rule=floor,zero_point=false,global=none,layout=row_major,
//          packing=nibble)
// whose omitted keys take lowbit::ScaleSpec's defaults. A key given twice,
// or a granularity argument it does not take or gives twice, is refused
// with a message naming it.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FORMAT_SCHEMETEXT_H
#define LOWBIT_FORMAT_SCHEMETEXT_H

#include "format/Scheme.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit {

/// The dtype of a spec's unquantized values: quantize's input,
/// dequantize's output, a matmul's X and Y.
enum class ValueType : uint8_t { F32, F16, BF16 };

std::string_view valueTypeName(ValueType type);
std::optional<ValueType> parseValueType(std::string_view name);
/// Bytes of one element (4 or 2).
int64_t valueTypeBytes(ValueType type);

/// Named scheme name, or the compact `scheme(...)` form.
std::string printSchemeText(const Scheme &scheme);
std::optional<Scheme> parseSchemeText(std::string_view text,
                                      std::string *error = nullptr);

/// Splits a spec line on spaces, tabs and newlines; parentheses keep
/// `scheme(...)` one token.
std::vector<std::string_view> splitSpecTokens(std::string_view text);
/// The whole of `text` as a decimal int64 (no sign check, no bound).
std::optional<int64_t> parseWholeInt64(std::string_view text);

} // namespace lowbit

#endif // LOWBIT_FORMAT_SCHEMETEXT_H
