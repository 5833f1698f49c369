//===- ValueFormatting.h - How lowbit prints values and codes ---*- C++ -*-===//
//
// One spelling for every command, so the output of one command can be fed
// to another: values are the shortest decimal that reads back as the same
// double (every format value is an f32, so it reads back exactly as f32
// too); codes are 0x-hex padded to whole bytes.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_VALUEFORMATTING_H
#define LOWBIT_TOOLS_LOWBIT_VALUEFORMATTING_H

#include "format/Format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::cli {

/// Shortest round-trip decimal; "nan" (any sign), "inf", "-inf", "-0".
std::string formatValue(double value);
/// C hex-float as printf's %a writes it ("0x1.cp+8"); specials as above.
std::string formatHexValue(double value);
/// Lowercase hex with "0x", two digits per byte of the code's container:
/// 0x07 for e2m1, 0x7e for e4m3, 0x3c00 for f16.
std::string formatCode(const Format &format, uint32_t code);
/// Codes as a comma-separated list with runs shown as ranges
/// ("0x7d-0x7f,0xfd-0xff"), or "-" when there are none.
std::string formatCodeList(const Format &format, std::vector<uint32_t> codes);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_VALUEFORMATTING_H
