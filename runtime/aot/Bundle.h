//===- Bundle.h - AOT bundles: manifest model, reader, writer ---*- C++ -*-===//
//
// An AOT bundle is a directory: PTX (and cubin) files, optional .npy data
// and manifest.json, which says everything a loader needs to run the
// kernels without MLIR or LLVM: the parameter list (docs/kernel-abi.md),
// the kernels of each spec in launch order, and each launch's grid and
// block sizes and operands as small expressions over the buffers' shapes.
//
// The expressions exist because the GPU tail computes the grid on the host
// from the memref descriptors' sizes (gpu.launch_func operands); lowbit aot
// records that host arithmetic instead of a number, so one bundle serves
// every tensor size. They are the launch module's postfix expressions
// (runtime/aot/LaunchProgram.h), the same text the JIT caches: one syntax,
// one compiler, one evaluator for both. docs/aot.md describes the layout.
// Version 2 of the manifest introduced that syntax and the workspace; a
// version 1 manifest is refused with a message to rebuild the bundle.
// Version 3 added the entry kinds of the KV-cache and decode-attention
// kernels: ranked parameter shapes (`dims`, rank-N memref descriptors),
// files uploaded before a launch (`inputs`: a cache's state before an
// append, a bench's block table), a relative tolerance and a float64
// reference output. A version 2 manifest still loads (its entries are
// kind "scheme", every field new in 3 empty).
//
// MLIR-free: the GPU runner compiles this file with a plain C++ compiler.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_AOT_BUNDLE_H
#define LOWBIT_RUNTIME_AOT_BUNDLE_H

#include "runtime/aot/LaunchProgram.h"
#include "runtime/core/Json.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::aot {

/// The manifest is read and written with the shared JSON model.
using json::JsonValue;
using json::parseJson;

inline constexpr std::string_view kManifestFormat = "lowbit-aot-bundle";
inline constexpr int kManifestVersion = 3;
/// The oldest version this reader still loads.
inline constexpr int kOldestManifestVersion = 2;

using Shape = std::array<int64_t, 2>;

/// Bounds of what a manifest may say, checked when it is read: a size is
/// at most 2^40, a shape at most 2^40 elements (so bytes cannot overflow),
/// and an operand names one of at most 64 parameters.
inline constexpr int64_t kMaxDimension = int64_t(1) << 40;
inline constexpr int64_t kMaxElements = int64_t(1) << 40;
inline constexpr int64_t kMaxParameters = 64;

/// One kernel parameter (docs/kernel-abi.md), in ABI order.
struct ParamInfo {
  /// input, scales, zeros, global, codes, output; the KV kernels' and
  /// attention's own names (positions, block_table, query, key_codes, ...).
  std::string role;
  std::string element; ///< f32, f16, bf16, i8, i32
  bool written = false;
};

/// A launch operand: a host-function parameter passed as an expanded
/// rank-2 memref descriptor (7 kernel parameters: allocated, aligned,
/// offset, size0, size1, stride0, stride1), or a 32- or 64-bit scalar
/// expression (one 8-byte slot).
struct Operand {
  int memref = -1;    ///< parameter index, or -1
  std::string scalar; ///< expression, when memref < 0
  int bits = 64;      ///< scalar width: 32 or 64
};

/// What ptxas reported for one kernel (-1: unknown).
struct Resources {
  int registers = -1, spillStoreBytes = -1, spillLoadBytes = -1,
      stackBytes = -1, sharedBytes = -1;
};

struct Launch {
  std::string entry;
  std::array<std::string, 3> grid{"1", "1", "1"}, block{"1", "1", "1"};
  std::string shared = "0"; ///< dynamic shared memory bytes
  std::vector<Operand> operands;
  Resources resources;
};

/// The launch module's text form of a launch, and back.
launch::LaunchStep toLaunchStep(const Launch &launch);
std::optional<Launch> fromLaunchStep(const launch::LaunchStep &step,
                                     std::string *error);
/// A whole launch plan as launches, the one place the JIT and `lowbit aot`
/// turn one into the other: Unsupported ("the launches cannot be
/// described: WHY") for a plan the GPU tail could not derive, CorruptEntry
/// for a step that does not read as a launch (a damaged cache entry).
Expected<std::vector<Launch>> launchesFromPlan(const launch::LaunchPlan &plan);

/// Concrete buffer shapes for one tensor size (the shape rules live in the
/// format model, which the runner does not link).
struct SizeInstance {
  int64_t rows = 0, cols = 0;
  /// One per parameter: [rows, cols], for a ranked parameter its leading
  /// dimensions' product and its last one (the bytes it takes).
  std::vector<Shape> shapes;
  /// Version 3, empty or one per parameter: the full shape (rank 1 to 8).
  /// When given, launch expressions read `dim:P:D` from it and a memref
  /// operand is MLIR's expanded rank-N descriptor (3 + 2N slots).
  std::vector<std::vector<int64_t>> dims;
  /// Version 3, empty or one per parameter: a file (relative to the
  /// bundle) uploaded before the first launch, or "". For data, a written
  /// parameter's contents before the kernels run (an append updates a
  /// cache in place); for bench, contents a generated filler would get
  /// wrong (positions, sequence lengths, block tables).
  std::vector<std::string> inputs;
};

/// The largest rank a `dims` entry may have.
inline constexpr size_t kMaxRank = 8;

struct BundleData {
  SizeInstance size;
  /// Per parameter: the input file (read parameters) or the expected
  /// output file (written parameters), relative to the bundle; "" for a
  /// written parameter that is scratch (not compared).
  std::vector<std::string> files;
  /// Version 3: 0 compares written parameters bit for bit; > 0 compares
  /// f32 outputs within this relative error (per element, |got - want| <=
  /// tolerance * max(|want|, 1e-30)).
  double relativeTolerance = 0;
  /// Version 3: the float64 reference of one written f32 parameter, so a
  /// run reports its relative error (-1: none).
  int float64Param = -1;
  std::string float64File;
};

struct BundleEntry {
  /// "scheme" (quantize/dequantize of a named scheme), "kv" (kv_append,
  /// kv_dequantize) or "attention" (kv_decode_attention). Version 2
  /// entries are "scheme".
  std::string kind = "scheme";
  std::string name; ///< file stem, unique in the bundle
  std::string spec; ///< canonical spec text
  std::string key;  ///< hash of spec, target and PTX
  std::string op, scheme, valueType;
  std::string ptxFile, cubinFile; ///< cubinFile empty: PTX only
  std::vector<ParamInfo> params;
  /// i32 words of the per-stream workspace each launch gets as its trailing
  /// parameter (0: none; runtime/aot/WorkspacePool.h).
  int64_t workspaceWords = 0;
  std::vector<Launch> launches; ///< in launch order
  std::optional<BundleData> data;
  std::optional<SizeInstance> bench;
};

struct Manifest {
  std::string target;
  std::string lowbitVersion;
  std::vector<BundleEntry> entries;
};

JsonValue toJson(const Manifest &manifest);
std::optional<Manifest> manifestFromJson(const JsonValue &json,
                                         std::string *error);
/// Reads DIR/manifest.json.
std::optional<Manifest> readManifest(const std::string &bundleDirectory,
                                     std::string *error);

/// Evaluates a launch expression against the parameters' shapes.
std::optional<int64_t> evaluateExpression(std::string_view expression,
                                          std::span<const Shape> shapes,
                                          std::string *error);

/// Bytes of one element of a parameter type (f32/i32 4, f16/bf16 2, i8 1).
size_t elementBytes(std::string_view element);

/// The kernel parameters of one launch, packed as cuLaunchKernel wants
/// them: every slot is 8 bytes (pointers, i64, i32 in the low half),
/// `pointers[i]` points at slot i. `addresses[p]` is parameter p's device
/// address; with `workspaceWords` > 0 the workspace's [1, words]
/// descriptor at `workspace` is the trailing parameter.
struct PackedArguments {
  std::vector<uint64_t> slots;
  std::vector<void *> pointers;
};
std::optional<PackedArguments>
packArguments(const Launch &launch, std::span<const uint64_t> addresses,
              std::span<const Shape> shapes, std::string *error,
              uint64_t workspace = 0, int64_t workspaceWords = 0);

/// Grid and block sizes of a launch for these shapes.
struct LaunchSizes {
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t sharedBytes = 0;
};
std::optional<LaunchSizes> evaluateLaunch(const Launch &launch,
                                          std::span<const Shape> shapes,
                                          std::string *error,
                                          int64_t workspaceWords = 0);

/// One launch of an entry resolved for one size: its seven sizes (grid
/// x3, block x3, shared bytes) and cuLaunchKernel's parameter array, for
/// parameters at `addresses` (one per parameter) and the workspace's
/// [1, words] descriptor at `workspace`. With ranked `dims` (version 3) a
/// RankedLaunch (RankedLaunch.h) compiled for their ranks: each `dim:P:D`
/// is size D of parameter P's full shape and each memref operand its
/// rank-N descriptor {allocated, aligned, offset, sizes[N], strides[N]}
/// (row-major). Else the launch module's rank-2 step, as packArguments.
/// The runner and the manifest reader resolve every launch here; the
/// JIT's KV kernels use the same RankedLaunch, compiled once per kernel.
Status resolveLaunchFor(const Launch &launch, const SizeInstance &size,
                        std::span<const uint64_t> addresses, uint64_t workspace,
                        int64_t workspaceWords, launch::ResolvedStep &out);

/// resolveLaunchFor's sizes, and its arguments copied out (the
/// interface of evaluateLaunch and packArguments, for one size).
std::optional<LaunchSizes> evaluateLaunchFor(const Launch &launch,
                                             const SizeInstance &size,
                                             std::string *error,
                                             int64_t workspaceWords = 0);
std::optional<PackedArguments>
packArgumentsFor(const Launch &launch, std::span<const uint64_t> addresses,
                 const SizeInstance &size, std::string *error,
                 uint64_t workspace = 0, int64_t workspaceWords = 0);

} // namespace lowbit::aot

#endif // LOWBIT_RUNTIME_AOT_BUNDLE_H
