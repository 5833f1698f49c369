//===- LowbitFusedOps.td - The kernel-boundary region ------*- tablegen -*-===//
//
// `lowbit.fused` holds one kernel's computation: upstream ops on tensors
// (arith, math, linalg, tensor) that feed one `lowbit.quantize`. What the
// region yields is what the kernel writes; nothing else leaves it, so a
// lowering may keep every intermediate in registers (docs/fusion.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FUSED_OPS_TD
#define LOWBIT_FUSED_OPS_TD


def Lowbit_FusedOp : Lowbit_Op<"fused",
    [IsolatedFromAbove, RecursiveMemoryEffects,
     SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "One kernel: a prologue on tensors feeding lowbit.quantize";
  let description = [{
    A kernel boundary. The region's block takes the op's operands (the
    input, then side tensors such as an RMSNorm weight, a residual or a
    smoothing vector); its body is upstream ops on tensors (`arith`,
    `math`, `linalg`, `tensor`) and exactly one `lowbit.quantize`, directly
    in the body. `lowbit.yield` returns every result of that quantize, in
    order, then `side_outputs` more tensors the kernel also writes (the
    updated residual of residual-add + RMSNorm).

    The verifier refuses:
    - a yielded value that is neither a result of the quantize nor one of
      the declared side outputs: an intermediate value escaping the kernel;
    - a quantize result that is not yielded, or yielded out of order;
    - an op of another dialect in the body, or a second quantize;
    - block arguments that do not match the operands.

    IsolatedFromAbove: values enter only as operands, so the region is
    exactly the kernel's reads and writes.

    ```mlir
    %codes, %scales = lowbit.fused ins(%x, %w : tensor<4x64xf32>,
        tensor<1x64xf32>) -> tensor<4x32xi8>, tensor<4x2xi8> {
    ^bb0(%in: tensor<4x64xf32>, %weight: tensor<1x64xf32>):
      %y = ... linalg.generic ... // the prologue
      %c, %s = lowbit.quantize %y {scheme = #lowbit.scheme<"mxfp4">}
          : tensor<4x64xf32> -> tensor<4x32xi8> scales tensor<4x2xi8>
      lowbit.yield %c, %s : tensor<4x32xi8>, tensor<4x2xi8>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       DefaultValuedAttr<I64Attr, "0">:$side_outputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `ins` `(` $inputs `:` type($inputs) `)` attr-dict-with-keyword
    (`->` type($results)^)? $body
  }];
  let extraClassDeclaration = [{
    /// The one lowbit.quantize in the body (the verifier guarantees it).
    QuantizeOp getQuantize();
  }];
  let hasRegionVerifier = 1;
}

def Lowbit_YieldOp : Lowbit_Op<"yield",
    [Pure, Terminator, HasParent<"FusedOp">]> {
  let summary = "What a lowbit.fused kernel writes";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = [{ ($values^ `:` type($values))? attr-dict }];
}

#endif // LOWBIT_FUSED_OPS_TD
