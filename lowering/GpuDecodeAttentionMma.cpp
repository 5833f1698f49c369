//===- GpuDecodeAttentionMma.cpp - Pass K of stage 1 on tensor cores ------===//
//
// The q.K logits of the FlashDecoding block with mma.sync m16n8k16 (row.col,
// f16 x f16 -> f32) for an FP8 cache and an f16 or bf16 query
// (docs/decode-attention.md, "Tensor-core q.K"). Warp w of the block takes
// the split's 16-token tiles w, w + 4, ...; per tile
//   A = K (16 tokens x 16 channels per k-step): lane (g = lane / 4,
//       t = lane % 4) reads tokens g and g + 8 of the tile, 16 channels
//       per 16-byte load: chunk c = t + 4 r of the row (r = 0, 1, ...);
//       the chunk's codes become f16 exactly (every e4m3/e5m2 value is an
//       f16), and k-step s of the chunk takes its channels 4 s .. 4 s + 3
//       as the lane's two f16 pairs (a0a1 and a4a5 for token g, a2a3 and
//       a6a7 for token g + 8);
//   B = q^T in the same channel order: lane (g, t) holds head 8 n + g's
//       channels 16 c + 4 s .. + 3 (b0b1, b2b3), loaded once per block,
//       zero for heads past the group;
//   C = the 16 tokens' logits of 8 heads: c0, c1 token g, heads 2 t, 2 t
//       + 1; c2, c3 token g + 8.
// Which lane holds which fragment element is lowering/GpuMmaLayout.h's
// model (mma::kM16N8K16F16); the kernel reads it for the register order
// of A, B and C. The dot sums over all channels, so permuting the channels
// inside a k-step is free as long as A and B agree (channelInStep). A bf16
// query is scaled per (sequence, head) by 2^e with max|q| 2^e in [2^14, 2^15),
// so that every element at or above f16's normal range is exact, and the logit
// is multiplied by 2^-e with the key scale and softmax_scale (one multiply per
// token and head). Tokens past the split read the split's last token and store
// nothing.
//
//===----------------------------------------------------------------------===//

#include "lowering/DecodeAttentionEmitter.h"
#include "lowering/GpuMma.h"
#include "lowering/GpuMmaLayout.h"
#include "target/NativeConversionTable.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace lowbit::attention {
namespace {

constexpr int64_t kWarps = kv::kDecodeSlots * kv::kDecodeLanes / kit::kWarpSize;
/// mma.sync m16n8k16 with f16 multiplicands (an FP8 code decodes to f16
/// exactly, and a query is rounded to f16).
constexpr mma::MmaFragmentShape kShape = mma::kM16N8K16F16;
/// Tokens per tile (M), heads per n-tile (N), channels per k-step (K); a
/// 16-byte load holds one chunk of 16 channels.
constexpr int64_t kTileTokens = mma::kMmaM, kTileHeads = mma::kMmaN,
                  kStepChannels = 16;
static_assert(kShape.k == kStepChannels);
/// Lanes per token row (the quad of a fragment row).
constexpr int64_t kQuadLanes = 4;
/// Multiplicand elements per register (an f16 pair).
constexpr int kPair = kShape.elementsPerRegister();

/// Which of a chunk's channels fragment column (A) or row (B) `k` of
/// k-step `step` is, for the lane whose quad position t holds the chunk:
/// the ISA puts columns 2 t + {0, 1} and 2 t + 8 + {0, 1} in that lane
/// (GpuMmaLayout.h); the kernel gives it channels 4 step .. 4 step + 3,
/// so `k` (lane 0's column, the offset every lane adds to 2 t) is channel
/// 4 step + 2 (k / 8) + k % 2.
constexpr int64_t channelInStep(int64_t step, int k) {
  return 4 * step + 2 * (k / 8) + k % 2;
}

class MmaLogitsEmitter : public AttentionEmitter {
public:
  MmaLogitsEmitter(const AttentionEmitter &base, const MmaLogits &args)
      : AttentionEmitter(base), args(args) {}

  void emit() {
    Value warpLane =
        arith::RemUIOp::create(b, args.thread, idx(kit::kWarpSize));
    warp = arith::DivUIOp::create(b, args.thread, idx(kit::kWarpSize));
    quadRow = arith::DivUIOp::create(b, warpLane, idx(kQuadLanes));
    quadLane = arith::RemUIOp::create(b, warpLane, idx(kQuadLanes));
    loadQueryFragments();

    Value tiles = arith::CeilDivUIOp::create(b, args.count, idx(kTileTokens));
    Value trips = arith::CeilDivUIOp::create(b, tiles, idx(kWarps));
    auto loop = scf::ForOp::create(b, idx(0), trips, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value tile = add(mul(loop.getInductionVar(), idx(kWarps)), warp);
    Value first = add(mul(tile, idx(kTileTokens)), quadRow);
    // Tokens g and g + 8 of the tile (relative to the split's begin).
    Value tokens[2] = {first, add(first, idx(kTileTokens / 2))};
    // Both tokens' loads are issued before the first decode.
    SmallVector<Value> chunks[2];
    for (int half = 0; half < 2; ++half)
      chunks[half] = loadChunks(tokens[half]);
    for (int half = 0; half < 2; ++half)
      chunks[half] = decodeChunks(chunks[half]);
    for (int64_t n = 0; n < headTiles(); ++n)
      storeLogits(tokens, n, dotTile(chunks, n));
  }

private:
  int64_t chunksPerRow() const { return args.headDim / kStepChannels; }
  int64_t rounds() const {
    return (chunksPerRow() + kQuadLanes - 1) / kQuadLanes;
  }
  int64_t headTiles() const {
    return (args.group + kTileHeads - 1) / kTileHeads;
  }
  /// Whether every lane's chunk of round r is inside the row.
  bool roundIsFull(int64_t round) const {
    return (round + 1) * kQuadLanes <= chunksPerRow();
  }
  /// The lane's chunk of round r (16 channels), and whether it exists
  /// (null when every lane's does).
  std::pair<Value, Value> chunkOf(int64_t round) {
    Value chunk = add(quadLane, idx(round * kQuadLanes));
    if (roundIsFull(round))
      return {chunk, Value()};
    Value exists = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, chunk,
                                         idx(chunksPerRow()));
    return {arith::SelectOp::create(b, exists, chunk, idx(0)), exists};
  }

  Type f16Pair() { return VectorType::get({2}, b.getF16Type()); }
  Value pairOf(Value vector, int64_t at) {
    return vector::ShuffleOp::create(b, vector, vector,
                                     ArrayRef<int64_t>{at, at + 1});
  }
  Value intBitsToFloat(Value bits) {
    return arith::BitcastOp::create(b, b.getF32Type(), bits);
  }
  /// 2^e for an i32 e in [-126, 127].
  Value powerOfTwo(Value exponent) {
    Value biased = arith::AddIOp::create(b, exponent, i32(127));
    return intBitsToFloat(arith::ShLIOp::create(b, biased, i32(23)));
  }

  /// The B fragments of every k-step and head tile, and per head tile the
  /// factor each of the lane's two C columns' logits is multiplied by.
  void loadQueryFragments() {
    bool rescale = cast<MemRefType>(query.getType()).getElementType().isBF16();
    for (int64_t n = 0; n < headTiles(); ++n) {
      // Head 8 n + g of the group; past the group it reads member 0 and
      // holds zeros.
      Value member = add(quadRow, idx(n * kTileHeads));
      Value inGroup = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                            member, idx(args.group));
      Value head = add(mul(args.kvHead, idx(args.group)),
                       arith::SelectOp::create(b, inGroup, member, idx(0)));
      SmallVector<Value> channels;
      Value largest = f32(0.0f);
      for (int64_t r = 0; r < rounds(); ++r) {
        auto [chunk, exists] = chunkOf(r);
        Value keep =
            exists ? arith::AndIOp::create(b, inGroup, exists) : Value(inGroup);
        for (int64_t i = 0; i < kStepChannels; ++i) {
          Value channel = add(mul(chunk, idx(kStepChannels)), idx(i));
          Value q = arith::ExtFOp::create(
              b, b.getF32Type(), load(query, {args.sequence, head, channel}));
          q = arith::SelectOp::create(b, keep, q, f32(0.0f));
          channels.push_back(q);
          largest =
              arith::MaximumFOp::create(b, largest, math::AbsFOp::create(b, q));
        }
      }
      Value scaleDown = f32(1.0f);
      if (rescale) {
        // The quad holds the head's every channel: its max, then 2^e with
        // max 2^e in [2^14, 2^15) as two factors 2^e1 2^e2 (e in [-113,
        // 141], each factor a normal f32).
        for (int64_t offset = 1; offset < kQuadLanes; offset *= 2)
          largest = arith::MaximumFOp::create(b, largest,
                                              shuffleXor(largest, offset));
        Value bits = arith::BitcastOp::create(b, b.getI32Type(), largest);
        Value exponent = arith::SubIOp::create(
            b, arith::ShRUIOp::create(b, bits, i32(23)), i32(127));
        Value e = arith::SubIOp::create(b, i32(14), exponent);
        Value e1 = arith::ShRSIOp::create(b, e, i32(1));
        Value e2 = arith::SubIOp::create(b, e, e1);
        Value up1 = powerOfTwo(e1), up2 = powerOfTwo(e2);
        for (Value &q : channels)
          q = arith::MulFOp::create(b, arith::MulFOp::create(b, q, up1), up2);
        // Operands in a fixed order (C++ leaves an argument list's
        // unspecified; docs/testing.md, "Operand order").
        Value downSecond = powerOfTwo(arith::SubIOp::create(b, i32(0), e2));
        Value downFirst = powerOfTwo(arith::SubIOp::create(b, i32(0), e1));
        scaleDown = arith::MulFOp::create(b, downFirst, downSecond);
      }
      // k-step (r, s): B's registers in order, each the f16 pair of its
      // two rows' channels (16 c + 4 s + {0, 1} for b0b1, + {2, 3} for
      // b2b3).
      SmallVector<Value> fragments;
      for (int64_t r = 0; r < rounds(); ++r) {
        auto slice =
            ArrayRef<Value>(channels).slice(r * kStepChannels, kStepChannels);
        for (int64_t s = 0; s < kStepChannels / 4; ++s)
          for (int reg = 0; reg < kShape.bRegisters(); ++reg) {
            Value pair[kPair];
            for (int i = 0; i < kPair; ++i)
              pair[i] = arith::TruncFOp::create(
                  b, b.getF16Type(),
                  slice[channelInStep(
                      s, mma::bElement(kShape, 0, reg * kPair + i).row)]);
            fragments.push_back(
                vector::FromElementsOp::create(b, f16Pair(), pair));
          }
      }
      queryFragments.push_back(std::move(fragments));
      // C column 2 t + j holds head 8 n + 2 t + j, whose 2^-e lives in lane
      // 4 (2 t + j); the key scale and softmax_scale join it.
      Value base = arith::MulFOp::create(b, args.keyScale, f32(softmaxScale()));
      SmallVector<Value, 2> factors;
      for (int64_t j = 0; j < 2; ++j) {
        Value factor = base;
        if (rescale) {
          Value source = arith::IndexCastOp::create(
              b, b.getI32Type(),
              mul(add(mul(quadLane, idx(2)), idx(j)), idx(kQuadLanes)));
          Value down = shuffleIdx(scaleDown, source);
          factor = arith::MulFOp::create(b, base, down);
        }
        factors.push_back(factor);
      }
      logitFactors.push_back(std::move(factors));
    }
  }

  /// The row of split token `token` (the split's last token past its end):
  /// per round, the lane's chunk of 16 codes (zeros for a chunk past
  /// head_dim).
  SmallVector<Value> loadChunks(Value token) {
    Value absolute = add(args.begin, token);
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, absolute, args.end);
    Value read = arith::SelectOp::create(
        b, valid, absolute, arith::SubIOp::create(b, args.end, idx(1)));
    SmallVector<Value, 4> row = cacheRow(args.sequence, args.kvHead, read);
    auto codesType = VectorType::get({kStepChannels}, b.getI8Type());
    SmallVector<Value> loaded;
    for (int64_t r = 0; r < rounds(); ++r) {
      auto [chunk, exists] = chunkOf(r);
      SmallVector<Value, 5> at(row.begin(), row.end());
      at.push_back(mul(chunk, idx(kStepChannels)));
      auto [source, indices] = access(keyCodes, at);
      Value codes = loadVector(codesType, source, indices);
      if (exists)
        codes = arith::SelectOp::create(
            b, exists, codes,
            arith::ConstantOp::create(
                b, DenseElementsAttr::get(codesType, b.getI8IntegerAttr(0))));
      loaded.push_back(codes);
    }
    return loaded;
  }

  /// Chunks of codes decoded to f16 (exact for e4m3 and e5m2).
  SmallVector<Value> decodeChunks(ArrayRef<Value> loaded) {
    SmallVector<Value> chunks;
    for (Value codes : loaded) {
      auto decode = ld::DecodeOp::create(
          b, VectorType::get({kStepChannels}, b.getF32Type()), codes,
          op.getFormat());
      decode->setAttr(kDecodeAnyNanAttr, b.getUnitAttr());
      chunks.push_back(arith::TruncFOp::create(
          b, VectorType::get({kStepChannels}, b.getF16Type()), decode));
    }
    return chunks;
  }

  /// The tile's 16 x 8 dots of head tile n: one mma per k-step.
  SmallVector<Value, 4> dotTile(const SmallVector<Value> (&chunks)[2],
                                int64_t n) {
    SmallVector<Value, 4> acc(4, f32(0.0f));
    for (int64_t r = 0; r < rounds(); ++r)
      for (int64_t s = 0; s < kStepChannels / 4; ++s) {
        // A register `reg` holds the pair of row g (chunks[0], token g) or
        // g + 8 (chunks[1]) at lane 0's first column of the register.
        Value a[kShape.aRegisters()];
        for (int reg = 0; reg < kShape.aRegisters(); ++reg) {
          mma::MatrixCoordinate first = mma::aElement(kShape, 0, reg * kPair);
          a[reg] = pairOf(chunks[first.row / (kTileTokens / 2)][r],
                          channelInStep(s, first.col));
        }
        int64_t step = r * (kStepChannels / 4) + s;
        auto bFragments =
            ArrayRef<Value>(queryFragments[n])
                .slice(kShape.bRegisters() * step, kShape.bRegisters());
        // The operands are vector<2xf16> by construction, so the builder
        // cannot refuse them.
        acc =
            *buildMmaSyncF32(b, b.getLoc(), a, bFragments, acc, b.getF16Type());
      }
    return acc;
  }

  /// Stores the lane's four logits (tokens g, g + 8 x heads 2 t, 2 t + 1
  /// of head tile n: C element i's row and column past lane 0's) for
  /// tokens in the split and heads in the group.
  void storeLogits(Value (&tokens)[2], int64_t n, ArrayRef<Value> dots) {
    for (int i = 0; i < mma::kAccumulatorRegisters; ++i) {
      mma::MatrixCoordinate at = mma::accumulatorElement(0, i);
      int64_t half = at.row / (kTileTokens / 2), j = at.col;
      Value member =
          add(add(mul(quadLane, idx(2)), idx(j)), idx(n * kTileHeads));
      Value logit = arith::MulFOp::create(b, dots[i], logitFactors[n][j]);
      Value inSplit =
          arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                add(args.begin, tokens[half]), args.end);
      Value inGroup = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                            member, idx(args.group));
      auto ifOp = scf::IfOp::create(
          b, arith::AndIOp::create(b, inSplit, inGroup), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      memref::StoreOp::create(
          b, logit, args.logits,
          ValueRange{add(mul(tokens[half], idx(args.group)), member)});
    }
  }

  MmaLogits args;
  Value warp, quadRow, quadLane;
  SmallVector<SmallVector<Value>> queryFragments;
  SmallVector<SmallVector<Value, 2>> logitFactors;
};

} // namespace

void emitMmaLogits(const AttentionEmitter &emitter, const MmaLogits &args) {
  MmaLogitsEmitter(emitter, args).emit();
}

} // namespace lowbit::attention
