//===- LowbitDialect.td - The lowbit dialect ---------------*- tablegen -*-===//
//
// The dialect says *what* a quantization kernel does: the element format, how
// scales are shared and picked, and how codes are packed. Every fact about a
// format or a scheme comes from the C++ model in format/ (Format.h,
// Scheme.h); the dialect only spells it as attributes and checks shapes.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_TD
#define LOWBIT_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Lowbit_Dialect : Dialect {
  let name = "lowbit";
  let summary = "Quantization kernels described by format, scale and packing";
  let description = [{
    The `lowbit` dialect describes quantization kernels. Attributes carry the
    description: an element number format (`#lowbit.float`, `#lowbit.int`), a
    scale (`#lowbit.scale`) and a scheme that combines them with a packing
    (`#lowbit.scheme`). Ops (`lowbit.quantize`, `lowbit.dequantize`) say what
    is computed on 2-D ranked tensors `[rows, cols]`; groups and blocks run
    along the last axis unless the scale says otherwise.

    The attributes are a spelling of lowbit's one format model (the C++
    library in `format/`): names are expanded, parameters validated and
    shapes computed by that model, so the dialect, the CLI and the lowering
    always agree.

    Spelling rules: names of formats and schemes are strings
    (`#lowbit.scheme<"mxfp4">`, bare identifiers are accepted too); enum
    values are bare keywords (`type = e8m0`, `layout = swizzle_128x4`).
  }];
  let cppNamespace = "::lowbit::dialect";
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Lowbit_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lowbit_Dialect, mnemonic, traits>;

class Lowbit_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Lowbit_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // LOWBIT_DIALECT_TD
