//===- Fiber.h - User-space context switch for emulated GPU threads -*- C++
//-*-===//
//
// Each emulated GPU thread runs on its own stack; a barrier or a
// warp-synchronous op switches to the scheduler. On x86-64 the switch is a
// few instructions of hand-written assembly (callee-saved registers, MXCSR
// and the x87 control word, no system call); elsewhere it falls back to
// ucontext, which makes a sigprocmask system call per switch.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_EMULATOR_FIBER_H
#define LOWBIT_RUNTIME_EMULATOR_FIBER_H

#include <cstddef>
#include <memory>

namespace lowbit::emulator {

/// A saved execution context.
struct FiberContext;

/// Fixed-size stacks with a guard page below each (an overflow faults
/// instead of corrupting its neighbour), mapped once and reused.
class FiberStacks {
public:
  FiberStacks() = default;
  ~FiberStacks();
  FiberStacks(const FiberStacks &) = delete;
  FiberStacks &operator=(const FiberStacks &) = delete;

  /// Makes at least `count` stacks available; false if mmap fails.
  bool reserve(size_t count);
  /// Lowest and one-past-highest usable address of stack `index`.
  char *bottom(size_t index) const;
  char *top(size_t index) const;
  static constexpr size_t kStackBytes = 64 * 1024;

private:
  char *mapping = nullptr;
  size_t mappedCount = 0;
};

/// Storage for one context (opaque size: the ucontext fallback is large).
class Fiber {
public:
  Fiber();
  ~Fiber();
  Fiber(Fiber &&) noexcept;
  Fiber &operator=(Fiber &&) noexcept;

  /// Prepares this fiber to run entry(argument) on [stackBottom, stackTop)
  /// when first switched to. `entry` must never return: it ends by
  /// switching away for good.
  void prepare(char *stackBottom, char *stackTop, void (*entry)(void *),
               void *argument);
  /// Saves the running context into `from` and resumes `to`.
  static void switchTo(Fiber &from, Fiber &to);

  /// Leaves `from`, the running fiber, for good and resumes `to`. Under
  /// AddressSanitizer this frees `from`'s fake stack (the frames that
  /// stack-use-after-return detection moves off the real stack); a final
  /// switchTo would keep it, about a megabyte of mapping per ended fiber.
  [[noreturn]] static void exitTo(Fiber &from, Fiber &to);

private:
  std::unique_ptr<FiberContext> context;
};

} // namespace lowbit::emulator

#endif // LOWBIT_RUNTIME_EMULATOR_FIBER_H
