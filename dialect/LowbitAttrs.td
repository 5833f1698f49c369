//===- LowbitAttrs.td - lowbit formats, scales and schemes -*- tablegen -*-===//
//
// Each attribute stores the plain parameters of a lowbit::Format,
// lowbit::ScaleSpec or lowbit::Scheme. Parsing expands names through the
// model (lookupFormat, lookupScheme), printing asks the model for names
// (namedFormats, findNamedScheme), and the verifiers call the model's
// validators, so there is no second table of formats or schemes here.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_ATTRS_TD
#define LOWBIT_ATTRS_TD

include "dialect/LowbitDialect.td"

def Lowbit_FormatAttrInterface : AttrInterface<"FormatAttrInterface"> {
  let cppNamespace = "::lowbit::dialect";
  let description = [{
    An element number format: the dialect spelling of one `lowbit::Format`.
    Implemented by `#lowbit.float` and `#lowbit.int`, so that a scheme can
    hold either.
  }];
  let methods = [
    InterfaceMethod<"The format model's description of this format.",
                    "::lowbit::Format", "getFormat">,
  ];
}

def Lowbit_FloatFormatAttr : Lowbit_Attr<"FloatFormat", "float",
    [DeclareAttrInterfaceMethods<Lowbit_FormatAttrInterface>]> {
  let summary = "A parametric float element format (ExMy)";
  let description = [{
    A float format given by its exponent bits, mantissa bits, bias,
    signedness and special-code convention (`ieee`: inf and NaN when the
    exponent is all ones; `fn`: no inf, the all-ones code is NaN; `finite`:
    every code is a number). The named formats (e4m3, e5m2, e2m3, e3m2, e2m1,
    e8m0, ue4m3, f16, bf16) are instances of it.

    Short form: any float name `lowbit::lookupFormat` accepts, including the
    parametric spelling `[u]e<E>m<M>[b<BIAS>][-ieee|-fn|-finite]`:
    ```mlir
    #lowbit.float<"e4m3">
    #lowbit.float<"e3m4b5-fn">
    ```
    Full form, every parameter explicit:
    ```mlir
    #lowbit.float<exp = 3, man = 4, bias = 5, signed = true, specials = fn>
    ```
    The printer uses the short form exactly when the format is one of the
    model's named formats, and the full form otherwise.
  }];
  let parameters = (ins "int":$expBits, "int":$manBits, "int":$bias,
                        "bool":$isSigned, "::lowbit::SpecialCodes":$specials);
  let builders = [
    AttrBuilder<(ins "const ::lowbit::FloatParams &":$params), [{
      return $_get($_ctxt, params.expBits, params.manBits, params.bias,
                   params.isSigned, params.specials);
    }]>,
  ];
  let extraClassDeclaration = [{
    ::lowbit::FloatParams getParams() const;
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lowbit_IntFormatAttr : Lowbit_Attr<"IntFormat", "int",
    [DeclareAttrInterfaceMethods<Lowbit_FormatAttrInterface>]> {
  let summary = "An integer element format (two's complement or unsigned)";
  let description = [{
    An integer format of `bits` bits, signed (two's complement) or unsigned.

    Short form: any integer name `lowbit::lookupFormat` accepts:
    ```mlir
    #lowbit.int<"int4">
    #lowbit.int<"uint6">
    ```
    Full form:
    ```mlir
    #lowbit.int<bits = 6, signed = false>
    ```
    The printer uses the short form exactly when the format is one of the
    model's named formats.
  }];
  let parameters = (ins "int":$bits, "bool":$isSigned);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lowbit_ScaleAttr : Lowbit_Attr<"Scale", "scale"> {
  let summary = "How scales are shared, stored and picked";
  let description = [{
    Every field of `lowbit::ScaleSpec`. The granularity comes first, then
    `key = value` fields in any order; an omitted field takes the default of
    `lowbit::ScaleSpec` (the printer always prints every field).

    | granularity | meaning |
    |---|---|
    | `per_tensor` | one scale for the tensor |
    | `per_channel(axis = A)` | one scale per index along axis A |
    | `per_token` | one scale per row |
    | `group(G, axis = A)` | G consecutive elements along axis A (default 1) |
    | `block(RxC)` | 2-D tiles of R rows by C columns |

    | field | values |
    |---|---|
    | `tail` | `true`: the last group/block along an axis may be short |
    | `type` | `f32`, `f16`, `bf16`, `e8m0`, `ue4m3` |
    | `rule` | `absmax`, `minmax`, `floor` (OCP MX), `rceil` (cuBLAS) |
    | `mode` | `static` (passed in) or `dynamic` (computed in the kernel) |
    | `zero_point` | `true` for asymmetric schemes |
    | `global` | second-level per-tensor scale: `none`, `decode`, `encode` |
    | `layout` | `row_major` or `swizzle_128x4` (Blackwell scale tiles) |

    The keyword spellings are the model's (`lowbit::parseScaleType` etc.).

    ```mlir
    #lowbit.scale<group(32, axis = 1), tail = false, type = e8m0,
                  rule = floor, mode = dynamic, zero_point = false,
                  global = none, layout = row_major>
    ```
    The verifier checks what the scale alone determines (positive group and
    block sizes, a valid axis); combinations with the element format are
    checked by `#lowbit.scheme`.
  }];
  let parameters = (ins "::lowbit::Granularity":$granularity, "int":$axis,
                        "int":$groupSize, "int":$blockRows, "int":$blockCols,
                        "bool":$allowTail, "::lowbit::ScaleType":$scaleType,
                        "::lowbit::ScaleRule":$rule, "::lowbit::ScaleMode":$mode,
                        "bool":$zeroPoint, "::lowbit::GlobalScale":$globalScale,
                        "::lowbit::ScaleLayout":$layout);
  let builders = [
    // Canonicalizes first (canonicalScale in LowbitAttrs.cpp): fields the
    // granularity does not use go back to their defaults.
    AttrBuilder<(ins "const ::lowbit::ScaleSpec &":$spec), [{
      ::lowbit::ScaleSpec canonical = canonicalScale(spec);
      return $_get($_ctxt, canonical.granularity, canonical.axis,
                   canonical.groupSize, canonical.blockRows,
                   canonical.blockCols, canonical.allowTail, canonical.type,
                   canonical.rule, canonical.mode, canonical.zeroPoint,
                   canonical.globalScale, canonical.layout);
    }]>,
  ];
  let extraClassDeclaration = [{
    ::lowbit::ScaleSpec getSpec() const;
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lowbit_SchemeAttr : Lowbit_Attr<"Scheme", "scheme"> {
  let summary = "A quantization scheme: element format + scale + packing";
  let description = [{
    A `lowbit::Scheme`. Short form: a name `lowbit::lookupScheme` knows
    (`fp8_e4m3`, `fp8_e5m2`, `mxfp8`, `mxfp6_e2m3`, `mxfp6_e3m2`, `mxfp4`,
    `nvfp4`, `int4_g128`, `int8`, `int8_g64`, ...):
    ```mlir
    #lowbit.scheme<"mxfp4">
    ```
    Full form:
    ```mlir
    #lowbit.scheme<format = #lowbit.float<"e2m1">,
                   scale = #lowbit.scale<group(32, axis = 1), tail = false,
                                         type = e8m0, rule = floor,
                                         mode = dynamic, zero_point = false,
                                         global = none, layout = row_major>,
                   packing = nibble>
    ```
    Both spell the same attribute; the printer uses the name exactly when
    `lowbit::findNamedScheme` finds one. All three fields are required.
    The verifier runs `lowbit::validateScheme`, which rejects combinations
    that cannot work (an e8m0 scale with a zero point, a zero point on a
    float element, a format wider than its container, ...).
  }];
  let parameters = (ins "::lowbit::dialect::FormatAttrInterface":$format,
                        "::lowbit::dialect::ScaleAttr":$scale,
                        "::lowbit::Packing":$packing);
  let extraClassDeclaration = [{
    /// The model's scheme; its name is set when it is a named scheme.
    ::lowbit::Scheme getScheme() const;
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // LOWBIT_ATTRS_TD
