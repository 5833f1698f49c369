//===- Simt.cpp - Blocks, fibers, barriers and warp ops -------------------===//
//
// One Device runs one launch at a time on the calling OS thread. The
// runtime functions the JIT'd kernels call reach the running launch through
// a thread-local pointer; a fiber that finds a violation records the message
// and switches to the scheduler for good (its stack is simply abandoned), so
// nothing after the violating access runs.
//
//===----------------------------------------------------------------------===//

#include "runtime/emulator/Simt.h"

#include "format/Codec.h"
#include "runtime/emulator/Fiber.h"
#include "runtime/emulator/Mma.h"
#include "target/ChipTable.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>

namespace lowbit::emulator {

namespace {

constexpr uint32_t kWarpSize = 32;
/// What a shuffle returns when its source lane is outside the member mask
/// (undefined in PTX): a NaN with a recognisable payload, so that a kernel
/// that uses it produces a mismatch.
constexpr uint32_t kUndefinedLaneValue = 0x7fbadbadu;
/// Shared memory is uninitialized on the GPU: each block starts with this.
constexpr uint8_t kSharedPoison = 0xA5;

std::string hex(uint64_t value) {
  char text[24];
  snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

/// The PTX instruction of a warp op (`variant`: the MmaSync/LdMatrix code).
std::string warpOpName(WarpOpKind kind, uint32_t variant) {
  switch (kind) {
  case WarpOpKind::ShflBfly:
    return "shfl.sync.bfly";
  case WarpOpKind::ShflUp:
    return "shfl.sync.up";
  case WarpOpKind::ShflDown:
    return "shfl.sync.down";
  case WarpOpKind::ShflIdx:
    return "shfl.sync.idx";
  case WarpOpKind::VoteAny:
    return "vote.sync.any";
  case WarpOpKind::VoteAll:
    return "vote.sync.all";
  case WarpOpKind::VoteBallot:
    return "vote.sync.ballot";
  case WarpOpKind::VoteUni:
    return "vote.sync.uni";
  case WarpOpKind::SyncWarp:
    return "bar.warp.sync";
  case WarpOpKind::Elect:
    return "elect.sync";
  case WarpOpKind::MmaSync:
    return MmaVariant::fromCode(int32_t(variant)).name();
  case WarpOpKind::LdMatrix:
    return LdMatrixVariant::fromCode(int32_t(variant)).name();
  default:
    return "redux.sync";
  }
}

/// mma.sync and ldmatrix: .aligned, so every lane at the same instruction.
bool isAlignedMatrixOp(WarpOpKind kind) {
  return kind == WarpOpKind::MmaSync || kind == WarpOpKind::LdMatrix;
}

struct SharedAccess {
  uint32_t thread = 0;
  uint32_t epoch = 0; ///< 0: none
  uint32_t warpEpoch = 0;
};
struct SharedByteRecord {
  SharedAccess writer, reader, otherReader;
};

struct ThreadRecord {
  enum class State : uint8_t { Ready, AtBarrier, AtWarpOp, Exited };
  Fiber fiber;
  uint32_t x = 0, y = 0, z = 0, linear = 0;
  State state = State::Ready;
  WarpOpKind kind = WarpOpKind::SyncWarp;
  uint32_t mask = 0, value = 0, b = 0, c = 0;
  uint64_t result = 0;
};

thread_local Device::Impl *currentDevice = nullptr;

} // namespace

struct Device::Impl {
  EmulatorOptions options;
  EmulatorStats stats;
  FiberStacks stacks;
  Fiber scheduler;
  std::vector<ThreadRecord> threads;
  std::vector<MemoryRange> moduleMemory;
  /// Global memory of the running launch, sorted by address.
  std::vector<MemoryRange> ranges;

  const KernelLaunch *launch = nullptr;
  Dim3 blockIndex;
  uint32_t threadCount = 0;
  std::vector<uint8_t> shared;
  std::vector<uint32_t> runQueue;
  size_t queueHead = 0;
  uint32_t current = 0;
  uint32_t arrivedAtBarrier = 0;
  int32_t barrierId = 0;
  uint32_t exitedCount = 0;
  uint32_t firstExited = 0;
  std::string error;

  uint32_t epoch = 0;
  std::vector<uint32_t> warpEpochs;
  std::vector<SharedByteRecord> sharedRecords;
  /// Each thread's mma.sync / ldmatrix registers and ldmatrix row address,
  /// sized at a launch's first matrix op.
  std::vector<MmaLaneRegisters> mmaRegisters;
  std::vector<const uint8_t *> ldmatrixRows;

  /// cp.async (docs/emulator.md, "Asynchronous copies"): a copy reads its
  /// source when issued and lands in shared memory at the issuing thread's
  /// cp.async.wait_group that completes its group.
  struct PendingCopy {
    uint8_t *destination = nullptr;
    uint32_t bytes = 0;
    uint32_t group = 0; ///< kUncommitted until cp.async.commit_group
    uint8_t data[16] = {};
  };
  static constexpr uint32_t kUncommitted = ~0u;
  struct CopyQueue {
    std::vector<PendingCopy> copies; ///< issue order
    uint32_t committedGroups = 0;
  };
  /// Per thread, sized at a launch's first cp.async.
  std::vector<CopyQueue> copyQueues;
  /// Per shared byte: 1 + the thread whose pending copy will write it, or 0.
  std::vector<uint32_t> pendingCopyOwner;
  uint64_t pendingCopyBytes = 0;

  ThreadRecord &self() { return threads[current]; }

  std::string describeThread(uint32_t index) const {
    const ThreadRecord &t = threads[index];
    return "thread (" + std::to_string(t.x) + "," + std::to_string(t.y) + "," +
           std::to_string(t.z) + ") of block (" + std::to_string(blockIndex.x) +
           "," + std::to_string(blockIndex.y) + "," +
           std::to_string(blockIndex.z) + ") in kernel " + launch->name;
  }

  /// Records the violation (`message()`, the first of a launch) and leaves
  /// this fiber for good. The message is built inside the call so that no
  /// temporary of it is alive when the fiber leaves: its frames are never
  /// unwound, and a string left in one leaks (LeakSanitizer saw them once
  /// Fiber::exitTo freed ASan's fake stacks).
  template <typename Message> [[noreturn]] void fail(Message &&message) {
    if (error.empty())
      error = message();
    Fiber::exitTo(self().fiber, scheduler);
  }

  void yield() {
    Fiber::switchTo(self().fiber, scheduler);
    if (!error.empty()) // never resumed after an error; defensive
      __builtin_unreachable();
  }

  void makeReady(uint32_t index) {
    threads[index].state = ThreadRecord::State::Ready;
    if (index != current)
      runQueue.push_back(index);
  }

  static void threadMain(void *) {
    Impl &device = *currentDevice;
    device.launch->entry(device.launch->parameters);
    device.threadExited();
  }

  [[noreturn]] void threadExited() {
    ThreadRecord &t = self();
    t.state = ThreadRecord::State::Exited;
    if (exitedCount++ == 0)
      firstExited = current;
    if (arrivedAtBarrier > 0)
      fail([&] {
        return describeThread(current) + " exited while " +
               std::to_string(arrivedAtBarrier) +
               " threads of its block wait at a barrier: every thread of a "
               "block must reach each barrier";
      });
    uint32_t lane = t.linear % kWarpSize, warpBase = t.linear - lane;
    for (uint32_t other = warpBase;
         other < std::min(threadCount, warpBase + kWarpSize); ++other) {
      const ThreadRecord &o = threads[other];
      if (o.state == ThreadRecord::State::AtWarpOp && (o.mask >> lane & 1))
        fail([&] {
          return describeThread(current) + " exited while lane " +
                 std::to_string(other - warpBase) + " waits for it in " +
                 warpOpName(o.kind, o.b) + " with member mask " + hex(o.mask);
        });
    }
    landCopiesAtExit();
    Fiber::exitTo(t.fiber, scheduler);
  }

  void barrier(int32_t id) {
    if (exitedCount > 0)
      fail([&] {
        return describeThread(current) + " reached a barrier after " +
               describeThread(firstExited) +
               " exited: every thread of a block must reach each barrier";
      });
    if (arrivedAtBarrier > 0 && id != barrierId)
      fail([&] {
        return describeThread(current) + " waits at barrier " +
               std::to_string(id) + " while others wait at barrier " +
               std::to_string(barrierId);
      });
    barrierId = id;
    self().state = ThreadRecord::State::AtBarrier;
    if (++arrivedAtBarrier < threadCount)
      return yield();
    arrivedAtBarrier = 0;
    ++stats.barriers;
    ++epoch; // shared accesses before and after are ordered
    for (uint32_t i = 0; i < threadCount; ++i)
      if (threads[i].state == ThreadRecord::State::AtBarrier)
        makeReady(i);
  }

  uint64_t warpOp(WarpOpKind kind, uint32_t mask, uint32_t value, uint32_t b,
                  uint32_t c) {
    ThreadRecord &t = self();
    uint32_t lane = t.linear % kWarpSize, warpBase = t.linear - lane;
    uint32_t lanes = std::min(kWarpSize, threadCount - warpBase);
    uint32_t existing = lanes == 32 ? ~0u : (1u << lanes) - 1;
    // Named only for a message: an mma variant's name is built.
    auto op = [&] { return warpOpName(kind, b); };
    if (!(mask >> lane & 1))
      fail([&] {
        return describeThread(current) + " executes " + op() +
               " with member mask " + hex(mask) +
               " that does not name its lane " + std::to_string(lane);
      });
    if (mask & ~existing)
      fail([&] {
        return describeThread(current) + " executes " + op() +
               " with member mask " + hex(mask) +
               " naming lanes that do not "
               "exist: its warp has " +
               std::to_string(lanes) + " threads";
      });
    for (uint32_t other = 0; other < lanes; ++other) {
      if (!(mask >> other & 1) || other == lane)
        continue;
      const ThreadRecord &o = threads[warpBase + other];
      if (o.state == ThreadRecord::State::Exited)
        fail([&] {
          return describeThread(current) + " executes " + op() +
                 " with member mask " + hex(mask) + " but lane " +
                 std::to_string(other) + " has exited";
        });
      if (o.state != ThreadRecord::State::AtWarpOp)
        continue;
      // A matrix op's variant is part of the instruction.
      if (o.kind != kind || o.mask != mask ||
          (isAlignedMatrixOp(kind) && o.b != b))
        fail([&] {
          return describeThread(current) + " executes " + op() +
                 " with member mask " + hex(mask) + " while lane " +
                 std::to_string(other) + " waits in " +
                 warpOpName(o.kind, o.b) + " with member mask " + hex(o.mask);
        });
      if (isAlignedMatrixOp(kind) && o.value != value)
        fail([&] {
          return describeThread(current) + " executes " + op() + " (site " +
                 std::to_string(value) + ") while lane " +
                 std::to_string(other) + " waits in it at site " +
                 std::to_string(o.value) +
                 ": .aligned requires every lane of the warp at the same "
                 "instruction";
        });
    }
    t.state = ThreadRecord::State::AtWarpOp;
    t.kind = kind;
    t.mask = mask;
    t.value = value;
    t.b = b;
    t.c = c;
    bool complete = true;
    for (uint32_t other = 0; other < lanes && complete; ++other)
      if (mask >> other & 1)
        complete =
            threads[warpBase + other].state == ThreadRecord::State::AtWarpOp;
    if (!complete) {
      yield();
      return self().result;
    }
    resolveWarpOp(warpBase, lanes, mask, kind);
    return self().result;
  }

  /// The running launch's per-thread matrix-op registers, sized at its
  /// first mma.sync or ldmatrix.
  MmaLaneRegisters &matrixRegisters() {
    if (mmaRegisters.size() < threadCount) {
      mmaRegisters.resize(threadCount);
      ldmatrixRows.resize(threadCount);
    }
    return mmaRegisters[current];
  }

  /// mma.sync.aligned at the module's matrix-op `site`: a warp op over all
  /// 32 lanes (a missing, exited or divergent lane is the warp op's error, a
  /// lane at another site too); returns this lane's d.
  const MmaLaneRegisters &mmaSync(int32_t variant, uint32_t site,
                                  const MmaLaneRegisters &registers) {
    matrixRegisters() = registers;
    warpOp(WarpOpKind::MmaSync, ~0u, site, uint32_t(variant), 0);
    return mmaRegisters[current];
  }

  /// ldmatrix at `site`: this lane's row address (read only if the lane
  /// supplies a row of one of the matrices) in, its registers in d out.
  uint32_t ldmatrix(int32_t code, uint32_t site, const uint8_t *row) {
    LdMatrixVariant variant = LdMatrixVariant::fromCode(code);
    uint32_t lane = self().linear % kWarpSize;
    if (lane < uint32_t(mma::kLdMatrixRows * variant.matrices)) {
      auto what = [&] {
        return describeThread(current) + ": " + variant.name() +
               " row address " + hex(uintptr_t(row)) + " (lane " +
               std::to_string(lane) + ", row " + std::to_string(lane % 8) +
               " of matrix " + std::to_string(lane / 8) + ")";
      };
      if (!inShared(row, 16))
        fail([&] {
          return what() + " is not 16 bytes inside shared memory (ldmatrix "
                          "reads .shared)";
        });
      if (uintptr_t(row) % 16 != 0)
        fail([&] {
          return what() + " is not aligned to 16 bytes (each row of 8 b16 "
                          "elements must be)";
        });
      checkAccess(row, 16, 16, AccessKind::Load, "ldmatrix row load");
    }
    matrixRegisters();
    ldmatrixRows[current] = row;
    warpOp(WarpOpKind::LdMatrix, ~0u, site, uint32_t(code), 0);
    return mmaRegisters[current].d[0];
  }

  void resolveWarpOp(uint32_t warpBase, uint32_t lanes, uint32_t mask,
                     WarpOpKind kind) {
    ++stats.warpOps;
    if (isAlignedMatrixOp(kind)) {
      // warpOp checked that all 32 lanes exist and arrived at the same
      // variant.
      int32_t code = int32_t(threads[warpBase].b);
      std::span<MmaLaneRegisters, mma::kWarpLanes> registers(
          mmaRegisters.data() + warpBase, mma::kWarpLanes);
      if (kind == WarpOpKind::MmaSync)
        executeWarpMma(MmaVariant::fromCode(code), registers);
      else
        executeLdMatrix(LdMatrixVariant::fromCode(code),
                        std::span<const uint8_t *const, mma::kWarpLanes>(
                            ldmatrixRows.data() + warpBase, mma::kWarpLanes),
                        registers);
      for (uint32_t lane = 0; lane < lanes; ++lane) {
        threads[warpBase + lane].result = 0;
        makeReady(warpBase + lane);
      }
      return;
    }
    auto valueOf = [&](uint32_t lane) {
      return threads[warpBase + lane].value;
    };
    uint64_t reduced = 0;
    bool isRedux =
        kind >= WarpOpKind::ReduxAdd && kind <= WarpOpKind::ReduxFmaxAbsNan;
    if (isRedux)
      reduced = reduce(kind, mask, valueOf);
    uint32_t ballot = 0;
    for (uint32_t lane = 0; lane < lanes; ++lane)
      if ((mask >> lane & 1) && (valueOf(lane) & 1))
        ballot |= 1u << lane;
    if (kind == WarpOpKind::SyncWarp)
      ++warpEpochs[warpBase / kWarpSize];
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      if (!(mask >> lane & 1))
        continue;
      ThreadRecord &t = threads[warpBase + lane];
      switch (kind) {
      case WarpOpKind::ShflBfly:
      case WarpOpKind::ShflUp:
      case WarpOpKind::ShflDown:
      case WarpOpKind::ShflIdx: {
        // PTX ISA, shfl.sync: c packs the segment mask (bits 8-12) and the
        // clamp value (bits 0-4).
        int32_t bval = int32_t(t.b & 31), cval = int32_t(t.c & 31);
        int32_t segmask = int32_t((t.c >> 8) & 31);
        int32_t self = int32_t(lane);
        int32_t maxLane = (self & segmask) | (cval & ~segmask);
        int32_t minLane = self & segmask;
        int32_t source = 0;
        bool inRange = false;
        if (kind == WarpOpKind::ShflUp) {
          source = self - bval;
          inRange = source >= maxLane;
        } else if (kind == WarpOpKind::ShflDown) {
          source = self + bval;
          inRange = source <= maxLane;
        } else if (kind == WarpOpKind::ShflBfly) {
          source = self ^ bval;
          inRange = source <= maxLane;
        } else {
          source = minLane | (bval & ~segmask);
          inRange = source <= maxLane;
        }
        if (!inRange)
          source = self;
        uint32_t result = kUndefinedLaneValue;
        if (source >= 0 && source < int32_t(lanes) && (mask >> source & 1))
          result = valueOf(uint32_t(source));
        t.result = uint64_t(result) | (uint64_t(inRange) << 32);
        break;
      }
      case WarpOpKind::VoteAny:
        t.result = ballot != 0;
        break;
      case WarpOpKind::VoteAll:
        t.result = ballot == mask;
        break;
      case WarpOpKind::VoteBallot:
        t.result = ballot;
        break;
      case WarpOpKind::VoteUni:
        t.result = ballot == 0 || ballot == mask;
        break;
      case WarpOpKind::SyncWarp:
        t.result = 0;
        break;
      case WarpOpKind::Elect:
        t.result = lane == uint32_t(std::countr_zero(mask));
        break;
      default:
        t.result = reduced;
        break;
      }
      makeReady(warpBase + lane);
    }
  }

  template <typename ValueOf>
  static uint64_t reduce(WarpOpKind kind, uint32_t mask, ValueOf valueOf) {
    bool first = true;
    uint32_t accumulator = 0;
    bool isFloat = kind >= WarpOpKind::ReduxFmin;
    bool anyNan = false;
    bool propagateNan = kind >= WarpOpKind::ReduxFminNan;
    bool absolute = kind == WarpOpKind::ReduxFminAbs ||
                    kind == WarpOpKind::ReduxFmaxAbs ||
                    kind == WarpOpKind::ReduxFminAbsNan ||
                    kind == WarpOpKind::ReduxFmaxAbsNan;
    bool isMin =
        kind == WarpOpKind::ReduxFmin || kind == WarpOpKind::ReduxFminAbs ||
        kind == WarpOpKind::ReduxFminNan || kind == WarpOpKind::ReduxFminAbsNan;
    for (uint32_t lane = 0; lane < kWarpSize; ++lane) {
      if (!(mask >> lane & 1))
        continue;
      uint32_t v = valueOf(lane);
      if (isFloat) {
        if (absolute)
          v &= 0x7fffffffu;
        float f = bitsToFloat(v);
        if (std::isnan(f)) {
          anyNan = true;
          continue; // NaN inputs are ignored unless .NaN is given
        }
        if (first) {
          accumulator = v;
          first = false;
          continue;
        }
        float a = bitsToFloat(accumulator);
        // -0.0 orders below +0.0.
        bool less = f < a || (f == a && (v >> 31) > (accumulator >> 31));
        bool greater = f > a || (f == a && (v >> 31) < (accumulator >> 31));
        if (isMin ? less : greater)
          accumulator = v;
        continue;
      }
      if (first) {
        accumulator = v;
        first = false;
        continue;
      }
      switch (kind) {
      case WarpOpKind::ReduxAdd:
        accumulator += v;
        break;
      case WarpOpKind::ReduxAnd:
        accumulator &= v;
        break;
      case WarpOpKind::ReduxOr:
        accumulator |= v;
        break;
      case WarpOpKind::ReduxXor:
        accumulator ^= v;
        break;
      case WarpOpKind::ReduxMax:
        accumulator = uint32_t(std::max(int32_t(accumulator), int32_t(v)));
        break;
      case WarpOpKind::ReduxMin:
        accumulator = uint32_t(std::min(int32_t(accumulator), int32_t(v)));
        break;
      case WarpOpKind::ReduxUmax:
        accumulator = std::max(accumulator, v);
        break;
      case WarpOpKind::ReduxUmin:
        accumulator = std::min(accumulator, v);
        break;
      default:
        break;
      }
    }
    if (isFloat && ((propagateNan && anyNan) || first))
      return 0x7fffffffu; // canonical NaN
    return accumulator;
  }

  void *sharedAddress(int64_t offset) { return shared.data() + offset; }

  bool inShared(const void *pointer, uint64_t bytes) const {
    auto address = reinterpret_cast<uintptr_t>(pointer);
    auto base = reinterpret_cast<uintptr_t>(shared.data());
    return address >= base && address + bytes <= base + shared.size();
  }

  /// `operation` names the access in messages when it is not a plain load,
  /// store or atomic (an ldmatrix row, a cp.async landing).
  void checkAccess(const void *pointer, int64_t bytes, int64_t align,
                   AccessKind kind, std::string_view operation = {}) {
    ++stats.checkedAccesses;
    auto address = reinterpret_cast<uintptr_t>(pointer);
    auto what = [&] {
      std::string verb = !operation.empty()          ? std::string(operation)
                         : kind == AccessKind::Load  ? "load"
                         : kind == AccessKind::Store ? "store"
                                                     : "atomic";
      return describeThread(current) + ": " + verb + " of " +
             std::to_string(bytes) + " bytes at " + hex(address);
    };
    if (align > 1 && address % uint64_t(align) != 0)
      fail([&] {
        return what() + " is not aligned to " + std::to_string(align) +
               " bytes (a misaligned address faults on the GPU)";
      });
    auto sharedBase = reinterpret_cast<uintptr_t>(shared.data());
    if (address >= sharedBase &&
        address + bytes <= sharedBase + shared.size()) {
      if (pendingCopyBytes > 0)
        checkNotPending(address - sharedBase, bytes, what);
      if (options.detectSharedRaces && kind != AccessKind::Atomic)
        recordSharedAccess(address - sharedBase, bytes, kind, what);
      return;
    }
    auto stackBottom = reinterpret_cast<uintptr_t>(stacks.bottom(current));
    if (address >= stackBottom &&
        address + bytes <= stackBottom + FiberStacks::kStackBytes)
      return;
    auto after =
        std::upper_bound(ranges.begin(), ranges.end(), address,
                         [](uintptr_t a, const MemoryRange &r) {
                           return a < reinterpret_cast<uintptr_t>(r.base);
                         });
    if (after != ranges.begin()) {
      const MemoryRange &range = *(after - 1);
      auto base = reinterpret_cast<uintptr_t>(range.base);
      if (address + bytes <= base + range.bytes) {
        if (kind != AccessKind::Load && !range.writable)
          fail([&] {
            return what() + " writes " + range.name +
                   ", an input of the kernel";
          });
        return;
      }
      // Inside, or just after the end (an off-by-one index): name it.
      if (address < base + range.bytes + 4096)
        fail([&] {
          return what() + " runs past the end of " + range.name + " (" +
                 std::to_string(range.bytes) + " bytes, offset " +
                 std::to_string(address - base) + ")";
        });
    }
    fail([&] {
      return what() + " is outside every buffer of the launch, shared memory "
                      "and the thread's stack";
    });
  }

  /// A shared byte a pending cp.async will write holds the old value (or the
  /// new one, the GPU does not say): touching it is an error.
  template <typename What>
  void checkNotPending(uintptr_t offset, int64_t bytes, What what) {
    for (int64_t i = 0; i < bytes; ++i)
      if (uint32_t owner = pendingCopyOwner[offset + size_t(i)])
        fail([&] {
          return what() + " touches shared offset " +
                 std::to_string(offset + size_t(i)) +
                 ", the destination of a cp.async of " +
                 describeThread(owner - 1) +
                 " that has not landed: that thread's cp.async.wait_group must "
                 "complete it first, and a barrier must follow it before other "
                 "threads touch it";
        });
  }

  CopyQueue &copyQueue() {
    if (copyQueues.size() < threadCount) {
      copyQueues.resize(threadCount);
      pendingCopyOwner.assign(shared.size(), 0);
    }
    return copyQueues[current];
  }

  /// cp.async.{ca,cg}.shared.global [destination], [source], size,
  /// sourceSize: the source's first sourceSize bytes, then zeros.
  void cpAsync(uint8_t *destination, const uint8_t *source, int32_t size,
               int32_t sourceSize) {
    auto what = [&] {
      return describeThread(current) + ": cp.async of " + std::to_string(size) +
             " bytes (src-size " + std::to_string(sourceSize) + ") from " +
             hex(uintptr_t(source)) + " to " + hex(uintptr_t(destination));
    };
    if (size != 4 && size != 8 && size != 16)
      fail([&] { return what() + ": cp-size must be 4, 8 or 16"; });
    if (sourceSize < 0 || sourceSize > size)
      fail([&] {
        return what() +
               ": src-size must be at most cp-size (PTX leaves a larger "
               "one undefined)";
      });
    if (!inShared(destination, uint64_t(size)))
      fail([&] {
        return what() + ": the destination is not inside shared memory";
      });
    if (uintptr_t(destination) % uint64_t(size) != 0)
      fail([&] {
        return what() + ": the destination is not aligned to " +
               std::to_string(size) + " bytes";
      });
    if (sourceSize > 0) {
      if (inShared(source, 1))
        fail([&] {
          return what() + ": the source is in shared memory (cp.async reads "
                          ".global)";
        });
      checkAccess(source, sourceSize, size, AccessKind::Load,
                  "cp.async source read");
    }
    CopyQueue &queue = copyQueue();
    size_t offset = size_t(destination - shared.data());
    for (int32_t i = 0; i < size; ++i)
      if (uint32_t owner = pendingCopyOwner[offset + size_t(i)])
        fail([&] {
          return what() + ": shared offset " +
                 std::to_string(offset + size_t(i)) +
                 " is already the destination of a pending cp.async of " +
                 describeThread(owner - 1);
        });
    PendingCopy copy;
    copy.destination = destination;
    copy.bytes = uint32_t(size);
    copy.group = kUncommitted;
    if (sourceSize > 0)
      std::memcpy(copy.data, source, size_t(sourceSize));
    for (int32_t i = 0; i < size; ++i)
      pendingCopyOwner[offset + size_t(i)] = current + 1;
    pendingCopyBytes += uint64_t(size);
    queue.copies.push_back(copy);
  }

  /// cp.async.commit_group: this thread's uncommitted copies form the next
  /// group (an empty group counts too).
  void cpAsyncCommit() {
    CopyQueue &queue = copyQueue();
    for (PendingCopy &copy : queue.copies)
      if (copy.group == kUncommitted)
        copy.group = queue.committedGroups;
    ++queue.committedGroups;
  }

  /// cp.async.wait_group N: every committed group but the N most recent
  /// lands; uncommitted copies do not.
  void cpAsyncWait(int32_t newest) {
    if (newest < 0)
      fail([&] {
        return describeThread(current) + ": cp.async.wait_group " +
               std::to_string(newest) + " (N must not be negative)";
      });
    CopyQueue &queue = copyQueue();
    uint32_t complete = queue.committedGroups > uint32_t(newest)
                            ? queue.committedGroups - uint32_t(newest)
                            : 0;
    landCopies(queue, [&](const PendingCopy &copy) {
      return copy.group != kUncommitted && copy.group < complete;
    });
  }

  /// Lands (in issue order) and forgets the copies `lands` picks. A landing
  /// is the issuing thread's store for the race check: another thread must
  /// see it through a barrier.
  template <typename Lands> void landCopies(CopyQueue &queue, Lands lands) {
    std::vector<PendingCopy> staying;
    for (const PendingCopy &copy : queue.copies) {
      if (!lands(copy)) {
        staying.push_back(copy);
        continue;
      }
      size_t offset = size_t(copy.destination - shared.data());
      std::fill_n(pendingCopyOwner.begin() + std::ptrdiff_t(offset), copy.bytes,
                  0u);
      pendingCopyBytes -= copy.bytes;
      checkAccess(copy.destination, copy.bytes, copy.bytes, AccessKind::Store,
                  "cp.async landing");
      std::memcpy(copy.destination, copy.data, copy.bytes);
    }
    queue.copies = std::move(staying);
  }

  /// A thread that exits with copies in flight: they still land (the GPU
  /// finishes them), as its stores.
  void landCopiesAtExit() {
    if (current < copyQueues.size() && !copyQueues[current].copies.empty())
      landCopies(copyQueues[current], [](const PendingCopy &) { return true; });
  }

  template <typename What>
  void recordSharedAccess(uintptr_t offset, int64_t bytes, AccessKind kind,
                          What what) {
    uint32_t me = current;
    uint32_t warp = threads[me].linear / kWarpSize;
    SharedAccess access{me, epoch, warpEpochs[warp]};
    auto conflicts = [&](const SharedAccess &other) {
      if (other.epoch != epoch || other.thread == me)
        return false;
      // bar.warp.sync orders the lanes of one warp.
      bool sameWarp = threads[other.thread].linear / kWarpSize == warp;
      return !(sameWarp && other.warpEpoch != warpEpochs[warp]);
    };
    auto race = [&](const SharedAccess &other, const char *how) {
      fail([&] {
        return "shared-memory race: " + what() + " (shared offset " +
               std::to_string(offset) + ") " + how + " by " +
               describeThread(other.thread) + " with no barrier between them";
      });
    };
    for (int64_t i = 0; i < bytes; ++i) {
      SharedByteRecord &record = sharedRecords[offset + size_t(i)];
      if (conflicts(record.writer))
        race(record.writer, "touches a byte written");
      if (kind == AccessKind::Store) {
        if (conflicts(record.reader))
          race(record.reader, "overwrites a byte read");
        if (conflicts(record.otherReader))
          race(record.otherReader, "overwrites a byte read");
        record.writer = access;
      } else if (record.reader.epoch != epoch || record.reader.thread == me) {
        record.reader = access;
      } else {
        record.otherReader = access;
      }
    }
  }

  Status runBlock(const Dim3 &block) {
    runQueue.clear();
    queueHead = 0;
    arrivedAtBarrier = 0;
    exitedCount = 0;
    ++epoch;
    std::fill(shared.begin(), shared.end(), kSharedPoison);
    std::fill(warpEpochs.begin(), warpEpochs.end(), 0);
    for (CopyQueue &queue : copyQueues)
      queue = {};
    std::fill(pendingCopyOwner.begin(), pendingCopyOwner.end(), 0u);
    pendingCopyBytes = 0;
    // Threads in descending order: nothing may depend on lane 0 going first.
    for (uint32_t i = 0; i < threadCount; ++i) {
      ThreadRecord &t = threads[i];
      t.state = ThreadRecord::State::Ready;
      t.fiber.prepare(stacks.bottom(i), stacks.top(i), &Impl::threadMain,
                      nullptr);
      runQueue.push_back(threadCount - 1 - i);
    }
    while (queueHead < runQueue.size()) {
      current = runQueue[queueHead++];
      ++stats.fiberSwitches;
      Fiber::switchTo(scheduler, threads[current].fiber);
      if (!error.empty())
        return makeError(ErrorCode::Unsupported, error);
    }
    if (exitedCount == threadCount)
      return Status::success();
    uint32_t atBarrier = 0, atWarpOp = 0;
    std::string example;
    for (uint32_t i = 0; i < threadCount; ++i) {
      const ThreadRecord &t = threads[i];
      if (t.state == ThreadRecord::State::AtBarrier)
        ++atBarrier;
      if (t.state != ThreadRecord::State::AtWarpOp)
        continue;
      ++atWarpOp;
      if (example.empty())
        example = "; " + describeThread(i) + " waits in " +
                  warpOpName(t.kind, t.b) + " with member mask " + hex(t.mask);
    }
    return makeError(
        ErrorCode::Unsupported,
        "deadlock in block (" + std::to_string(block.x) + "," +
            std::to_string(block.y) + "," + std::to_string(block.z) +
            ") of kernel " + launch->name + ": " + std::to_string(atBarrier) +
            " threads wait at a barrier, " + std::to_string(atWarpOp) +
            " in warp-synchronous ops, " + std::to_string(exitedCount) +
            " exited" + example);
  }
};

Device::Device(EmulatorOptions options) : impl(std::make_unique<Impl>()) {
  impl->options = options;
}
Device::~Device() = default;

void Device::setModuleMemory(std::vector<MemoryRange> ranges) {
  impl->moduleMemory = std::move(ranges);
}

const EmulatorStats &Device::stats() const { return impl->stats; }

Status Device::launch(const KernelLaunch &launch,
                      std::span<const MemoryRange> buffers) {
  Impl &d = *impl;
  auto invalid = [&](const std::string &why) {
    return makeError(ErrorCode::InvalidArgument,
                     "launch of " + launch.name + ": " + why);
  };
  // cuLaunchKernel's limits (target/ChipTable.h): the emulator is no
  // particular chip, so it takes what any recorded chip would.
  const Dim3 &g = launch.grid, &b = launch.block;
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0)
    return invalid("a grid or block dimension is 0");
  if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    return invalid("grid (" + std::to_string(g.x) + "," + std::to_string(g.y) +
                   "," + std::to_string(g.z) +
                   ") exceeds the limits (2^31-1, 65535, 65535)");
  if (b.count() > uint64_t(kMaxThreadsPerBlock) || b.x > kMaxThreadsPerBlock ||
      b.y > kMaxThreadsPerBlock || b.z > 64)
    return invalid("block (" + std::to_string(b.x) + "," + std::to_string(b.y) +
                   "," + std::to_string(b.z) + ") exceeds " +
                   std::to_string(kMaxThreadsPerBlock) + " threads");
  if (int64_t(launch.staticSharedBytes) > kStaticSharedBytesPerBlock)
    return invalid("static shared memory above " +
                   std::to_string(kStaticSharedBytesPerBlock / 1024) + " KiB");
  size_t sharedBytes =
      std::max(launch.staticSharedBytes,
               launch.dynamicSharedOffset + launch.dynamicSharedBytes);
  if (int64_t(sharedBytes) > largestSharedBytesPerBlock())
    return invalid("shared memory above " +
                   std::to_string(largestSharedBytesPerBlock() / 1024) +
                   " KiB");
  if (!launch.entry)
    return invalid("no entry point");

  d.threadCount = uint32_t(b.count());
  if (!d.stacks.reserve(d.threadCount))
    return makeError(ErrorCode::Io, "cannot map fiber stacks");
  if (d.threads.size() < d.threadCount)
    d.threads.resize(d.threadCount);
  for (uint32_t i = 0; i < d.threadCount; ++i) {
    ThreadRecord &t = d.threads[i];
    t.linear = i;
    t.x = i % b.x;
    t.y = (i / b.x) % b.y;
    t.z = i / (b.x * b.y);
  }
  d.shared.assign(sharedBytes, kSharedPoison);
  d.sharedRecords.assign(d.options.detectSharedRaces ? sharedBytes : 0, {});
  d.warpEpochs.assign((d.threadCount + kWarpSize - 1) / kWarpSize, 0);
  d.copyQueues.clear(); // sized again at the launch's first cp.async
  d.pendingCopyOwner.clear();
  d.ranges.assign(buffers.begin(), buffers.end());
  d.ranges.insert(d.ranges.end(), d.moduleMemory.begin(), d.moduleMemory.end());
  std::sort(d.ranges.begin(), d.ranges.end(),
            [](const MemoryRange &l, const MemoryRange &r) {
              return l.base < r.base;
            });
  d.launch = &launch;
  d.error.clear();
  ++d.stats.launches;

  // Blocks in a fixed shuffled order: no kernel may depend on block order.
  uint64_t blockCount = g.count();
  std::vector<uint32_t> order(blockCount);
  for (uint64_t i = 0; i < blockCount; ++i)
    order[i] = uint32_t(i);
  std::mt19937 rng(0x5eed1u + uint32_t(blockCount));
  std::shuffle(order.begin(), order.end(), rng);

  Impl *previous = currentDevice;
  currentDevice = &d;
  Status status;
  for (uint32_t linear : order) {
    d.blockIndex = {linear % g.x, (linear / g.x) % g.y, linear / (g.x * g.y)};
    ++d.stats.blocks;
    d.stats.threads += d.threadCount;
    status = d.runBlock(d.blockIndex);
    if (!status)
      break;
  }
  currentDevice = previous;
  d.launch = nullptr;
  return status;
}

//===----------------------------------------------------------------------===//
// The functions the rewritten kernels call
//===----------------------------------------------------------------------===//

namespace {

const Format &cvtFormat(int32_t format) {
  static const Format formats[] = {
      *lookupFormat("e4m3"), *lookupFormat("e5m2"), *lookupFormat("e8m0"),
      *lookupFormat("e2m3"), *lookupFormat("e3m2"), *lookupFormat("e2m1")};
  return formats[std::clamp(format, 0, 5)];
}

/// Codecs by (format, rounding, saturate), built once.
const Codec &cvtCodec(int32_t format, int32_t rounding, int32_t saturate) {
  static std::once_flag once;
  static std::vector<Codec> codecs;
  std::call_once(once, [] {
    for (int32_t f = 0; f < 6; ++f)
      for (Rounding r : {Rounding::NearestEven, Rounding::TowardZero,
                         Rounding::TowardPosInf})
        for (bool s : {false, true})
          codecs.emplace_back(cvtFormat(f), EncodeOptions{s, r});
  });
  return codecs[size_t(std::clamp(format, 0, 5) * 6 +
                       std::clamp(rounding, 0, 2) * 2 + (saturate ? 1 : 0))];
}

/// .relu: a negative result becomes +0 (NaN stays NaN).
uint32_t applyRelu(const Format &format, uint32_t code, float decoded) {
  if (std::isnan(decoded) || !std::signbit(decoded))
    return code;
  (void)format;
  return 0;
}

uint32_t encodeOne(int32_t format, int32_t rounding, int32_t saturate,
                   int32_t relu, float value) {
  const Codec &codec = cvtCodec(format, rounding, saturate);
  uint32_t code = codec.encode(value);
  return relu ? applyRelu(codec.format(), code, codec.decode(code)) : code;
}

/// cvt.rn{.satfinite}{.relu}.{f16,bf16}.f32: round to nearest even; a NaN
/// becomes the canonical NaN 0x7fff, as the hardware writes it.
uint16_t narrowHalf(float value, int32_t toBf16, int32_t saturate,
                    int32_t relu) {
  if (std::isnan(value))
    return 0x7fff;
  if (relu && std::signbit(value))
    value = 0.0f;
  uint16_t bits = toBf16 ? floatToBFloat16(value) : floatToHalf(value);
  if (saturate) {
    uint16_t magnitude = bits & 0x7fff;
    uint16_t infinity = toBf16 ? 0x7f80 : 0x7c00;
    if (magnitude >= infinity) // overflow or inf: the largest finite
      bits = uint16_t((bits & 0x8000) | (infinity - 1));
  }
  return bits;
}

} // namespace

extern "C" {

int32_t lowbit_emu_sreg(int32_t code) {
  Device::Impl &d = *currentDevice;
  const ThreadRecord &t = d.self();
  const KernelLaunch &l = *d.launch;
  switch (SpecialRegister(code)) {
  case SpecialRegister::TidX:
    return int32_t(t.x);
  case SpecialRegister::TidY:
    return int32_t(t.y);
  case SpecialRegister::TidZ:
    return int32_t(t.z);
  case SpecialRegister::NtidX:
    return int32_t(l.block.x);
  case SpecialRegister::NtidY:
    return int32_t(l.block.y);
  case SpecialRegister::NtidZ:
    return int32_t(l.block.z);
  case SpecialRegister::CtaidX:
    return int32_t(d.blockIndex.x);
  case SpecialRegister::CtaidY:
    return int32_t(d.blockIndex.y);
  case SpecialRegister::CtaidZ:
    return int32_t(d.blockIndex.z);
  case SpecialRegister::NctaidX:
    return int32_t(l.grid.x);
  case SpecialRegister::NctaidY:
    return int32_t(l.grid.y);
  case SpecialRegister::NctaidZ:
    return int32_t(l.grid.z);
  case SpecialRegister::LaneId:
    return int32_t(t.linear % kWarpSize);
  case SpecialRegister::WarpSize:
    return int32_t(kWarpSize);
  }
  d.fail([&] { return "unknown special register " + std::to_string(code); });
}

void lowbit_emu_barrier(int32_t id) { currentDevice->barrier(id); }

uint64_t lowbit_emu_warp_op(int32_t kind, uint32_t mask, uint32_t value,
                            uint32_t b, uint32_t c) {
  return currentDevice->warpOp(WarpOpKind(kind), mask, value, b, c);
}

/// mma.sync.aligned.<variant> (an MmaVariant code) at the module's
/// matrix-op `site` (every lane of the warp must be at the same one): this
/// lane's registers in (C as bits; scale-a-data and scale-b-data of a
/// block-scaled form, 0 otherwise), the bits of its d0 out; d1..d3 follow
/// from lowbit_emu_fragment (the host code calls it right after).
uint32_t lowbit_emu_mma(int32_t variant, int32_t site, uint32_t a0, uint32_t a1,
                        uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1,
                        uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                        uint32_t scaleA, uint32_t scaleB) {
  MmaLaneRegisters registers;
  registers.scaleA = scaleA;
  registers.scaleB = scaleB;
  registers.a[0] = a0;
  registers.a[1] = a1;
  registers.a[2] = a2;
  registers.a[3] = a3;
  registers.b[0] = b0;
  registers.b[1] = b1;
  registers.c[0] = c0;
  registers.c[1] = c1;
  registers.c[2] = c2;
  registers.c[3] = c3;
  return currentDevice->mmaSync(variant, uint32_t(site), registers).d[0];
}

/// ldmatrix.sync.aligned.<variant> (an LdMatrixVariant code) at `site`: this
/// lane's row address in, its first register out; the others follow from
/// lowbit_emu_fragment.
uint32_t lowbit_emu_ldmatrix(int32_t variant, int32_t site, const void *row) {
  return currentDevice->ldmatrix(variant, uint32_t(site),
                                 static_cast<const uint8_t *>(row));
}

/// Register `index` of this lane's last mma.sync (d) or ldmatrix.
uint32_t lowbit_emu_fragment(int32_t index) {
  Device::Impl &d = *currentDevice;
  return d.mmaRegisters[d.current].d[std::clamp(index, 0, 3)];
}

void lowbit_emu_cp_async(void *destination, const void *source, int32_t size,
                         int32_t sourceSize) {
  currentDevice->cpAsync(static_cast<uint8_t *>(destination),
                         static_cast<const uint8_t *>(source), size,
                         sourceSize);
}

void lowbit_emu_cp_async_commit() { currentDevice->cpAsyncCommit(); }

void lowbit_emu_cp_async_wait(int32_t newest) {
  currentDevice->cpAsyncWait(newest);
}

void *lowbit_emu_shared(int64_t offset) {
  return currentDevice->sharedAddress(offset);
}

void lowbit_emu_access(const void *pointer, int64_t bytes, int64_t align,
                       int32_t kind) {
  currentDevice->checkAccess(pointer, bytes, align, AccessKind(kind));
}

/// cvt.{rn,rz,rp}[.satfinite][.relu].{e4m3x2,e5m2x2,ue8m0x2,e2m3x2,e3m2x2,
/// e2m1x2}.f32 d, a, b: `a` in the high byte (nibble for e2m1).
uint32_t lowbit_emu_cvt_f32x2(float a, float b, int32_t format,
                              int32_t rounding, int32_t saturate,
                              int32_t relu) {
  uint32_t high = encodeOne(format, rounding, saturate, relu, a);
  uint32_t low = encodeOne(format, rounding, saturate, relu, b);
  return CvtFormat(format) == CvtFormat::E2M1 ? (high << 4) | low
                                              : (high << 8) | low;
}

/// cvt.rn[.relu].{f16x2,bf16x2}.{e4m3x2,...,e2m1x2}: element 0 (the low
/// half of the result) from the low byte (nibble for e2m1).
uint32_t lowbit_emu_cvt_to_half2(uint32_t codes, int32_t format, int32_t relu,
                                 int32_t toBf16) {
  const Codec &codec = cvtCodec(format, 0, 1);
  int shift = CvtFormat(format) == CvtFormat::E2M1 ? 4 : 8;
  uint32_t result = 0;
  for (int element = 0; element < 2; ++element) {
    float value =
        codec.decode((codes >> (element * shift)) & ((1u << shift) - 1));
    result |= uint32_t(narrowHalf(value, toBf16, 0, relu)) << (16 * element);
  }
  return result;
}

/// cvt.rn.satfinite[.relu].{e4m3x2,e5m2x2}.{f16x2,bf16x2}: the low half in
/// the low byte.
uint32_t lowbit_emu_cvt_half2_to_f8x2(uint32_t halves, int32_t format,
                                      int32_t fromBf16, int32_t rounding,
                                      int32_t saturate, int32_t relu) {
  uint32_t result = 0;
  for (int element = 0; element < 2; ++element) {
    auto bits = uint16_t(halves >> (16 * element));
    float value = fromBf16 ? bfloat16ToFloat(bits) : halfToFloat(bits);
    result |= encodeOne(format, rounding, saturate, relu, value)
              << (8 * element);
  }
  return result;
}

/// cvt.rn[.satfinite][.relu].{f16x2,bf16x2}.f32 d, hi, lo.
uint32_t lowbit_emu_cvt_f32x2_to_half2(float high, float low, int32_t toBf16,
                                       int32_t saturate, int32_t relu) {
  return uint32_t(narrowHalf(low, toBf16, saturate, relu)) |
         (uint32_t(narrowHalf(high, toBf16, saturate, relu)) << 16);
}

/// cvt.rn.{f16,bf16}.f32 (the bits in the low half).
uint32_t lowbit_emu_narrow_f32(float value, int32_t toBf16) {
  return narrowHalf(value, toBf16, 0, 0);
}

/// cvt.f32.{f16,bf16} (exact).
float lowbit_emu_widen_to_f32(uint32_t bits, int32_t fromBf16) {
  return fromBf16 ? bfloat16ToFloat(uint16_t(bits))
                  : halfToFloat(uint16_t(bits));
}

/// compiler-rt's __truncsfbf2 (f32 -> bf16), which the host's code
/// generator calls where a kernel computes in bf16: LLVM promotes the
/// operation to f32 and rounds back. The GPU's bf16 instruction rounds
/// once, to nearest even (f32 keeps 2 x 8 + 2 bits, so the f32 result
/// rounds to the same bf16), and writes the canonical NaN: cvt.rn's
/// narrowing. x86-64 returns a bf16 in the low half of xmm0, as a _Float16.
_Float16 lowbit_emu_truncsfbf2(float value) {
  return std::bit_cast<_Float16>(narrowHalf(value, 1, 0, 0));
}

} // extern "C"

std::span<const RuntimeSymbol> runtimeSymbols() {
  static const RuntimeSymbol symbols[] = {
      {"lowbit_emu_sreg", reinterpret_cast<void *>(&lowbit_emu_sreg)},
      {"lowbit_emu_barrier", reinterpret_cast<void *>(&lowbit_emu_barrier)},
      {"lowbit_emu_warp_op", reinterpret_cast<void *>(&lowbit_emu_warp_op)},
      {"lowbit_emu_shared", reinterpret_cast<void *>(&lowbit_emu_shared)},
      {"lowbit_emu_mma", reinterpret_cast<void *>(&lowbit_emu_mma)},
      {"lowbit_emu_ldmatrix", reinterpret_cast<void *>(&lowbit_emu_ldmatrix)},
      {"lowbit_emu_fragment", reinterpret_cast<void *>(&lowbit_emu_fragment)},
      {"lowbit_emu_cp_async", reinterpret_cast<void *>(&lowbit_emu_cp_async)},
      {"lowbit_emu_cp_async_commit",
       reinterpret_cast<void *>(&lowbit_emu_cp_async_commit)},
      {"lowbit_emu_cp_async_wait",
       reinterpret_cast<void *>(&lowbit_emu_cp_async_wait)},
      {"lowbit_emu_access", reinterpret_cast<void *>(&lowbit_emu_access)},
      {"lowbit_emu_cvt_f32x2", reinterpret_cast<void *>(&lowbit_emu_cvt_f32x2)},
      {"lowbit_emu_cvt_to_half2",
       reinterpret_cast<void *>(&lowbit_emu_cvt_to_half2)},
      {"lowbit_emu_cvt_half2_to_f8x2",
       reinterpret_cast<void *>(&lowbit_emu_cvt_half2_to_f8x2)},
      {"lowbit_emu_cvt_f32x2_to_half2",
       reinterpret_cast<void *>(&lowbit_emu_cvt_f32x2_to_half2)},
      {"lowbit_emu_narrow_f32",
       reinterpret_cast<void *>(&lowbit_emu_narrow_f32)},
      {"lowbit_emu_widen_to_f32",
       reinterpret_cast<void *>(&lowbit_emu_widen_to_f32)},
      // Not lowbit_emu_*: the host's code generator names it.
      {"__truncsfbf2", reinterpret_cast<void *>(&lowbit_emu_truncsfbf2)},
  };
  return symbols;
}

} // namespace lowbit::emulator
