//===- Fiber.cpp - User-space context switch ------------------------------===//

#include "runtime/emulator/Fiber.h"

#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define LOWBIT_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOWBIT_FIBER_ASAN 1
#endif
#endif

#if defined(LOWBIT_FIBER_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

namespace lowbit::emulator {

namespace {
size_t pageBytes() {
  static const size_t bytes = size_t(sysconf(_SC_PAGESIZE));
  return bytes;
}
size_t slotBytes() { return FiberStacks::kStackBytes + pageBytes(); }

/// Under AddressSanitizer: gives a stack that an earlier fiber used a fresh
/// mapping, which clears its shadow. A fiber leaves for good from inside
/// its frames (Fiber.h: `entry` never returns), so the redzones that ASan
/// poisoned for them are never unpoisoned, and the next fiber on the stack
/// met them: false stack-buffer-overflow reports in the emulator (found by
/// the sanitizer build). The runtime clears the shadow of a new mapping;
/// __asan_unpoison_memory_region would not do, as the sanitizer build sets
/// allow_user_poisoning=0 (docs/testing.md). Elsewhere, nothing.
void clearStackShadow([[maybe_unused]] char *bottom,
                      [[maybe_unused]] char *top) {
#if defined(LOWBIT_FIBER_ASAN)
  mmap(bottom, size_t(top - bottom), PROT_READ | PROT_WRITE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
#endif
}

/// AddressSanitizer is told of every switch (start/finish_switch_fiber), so
/// it knows which stack runs. Without that, the unpoisoning it does before a
/// call that never returns (Simt.cpp's threadExited, on a fiber's stack) was
/// refused with "ASan is ignoring requested __asan_handle_no_return ...
/// False positive error reports may follow" (the emulator teardown tests,
/// found by the sanitizer build). A fiber's bounds are set by prepare; the
/// scheduler's (a host thread's own stack) are learned each time it is left.
struct StackBounds {
  const void *bottom = nullptr;
  size_t size = 0;
};
#if defined(LOWBIT_FIBER_ASAN)
/// The bounds of the context that switched last, so that the context it
/// resumed can record them (finish_switch_fiber reports them there).
thread_local StackBounds *switchedFrom = nullptr;
#endif

/// A null `fakeStack` tells ASan the running context ends: it frees that
/// context's fake stack instead of handing it back for a later resume.
void startSwitch([[maybe_unused]] StackBounds &from,
                 [[maybe_unused]] const StackBounds &to,
                 [[maybe_unused]] void **fakeStack) {
#if defined(LOWBIT_FIBER_ASAN)
  switchedFrom = &from;
  __sanitizer_start_switch_fiber(fakeStack, to.bottom, to.size);
#endif
}

void finishSwitch([[maybe_unused]] void *fakeStack) {
#if defined(LOWBIT_FIBER_ASAN)
  StackBounds *previous = switchedFrom;
  const void *bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fakeStack, &bottom, &size);
  // Always, not once: the scheduler may run on another host thread's stack
  // at the next launch.
  if (previous)
    *previous = {bottom, size};
#endif
}
} // namespace

FiberStacks::~FiberStacks() {
  if (mapping)
    munmap(mapping, mappedCount * slotBytes());
}

bool FiberStacks::reserve(size_t count) {
  if (count <= mappedCount)
    return true;
  if (mapping)
    munmap(mapping, mappedCount * slotBytes());
  mapping = nullptr;
  mappedCount = 0;
  // Pages are committed only when a fiber touches them.
  void *memory = mmap(nullptr, count * slotBytes(), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    return false;
  mapping = static_cast<char *>(memory);
  mappedCount = count;
  for (size_t i = 0; i < count; ++i)
    mprotect(mapping + i * slotBytes(), pageBytes(), PROT_NONE);
  return true;
}

char *FiberStacks::bottom(size_t index) const {
  return mapping + index * slotBytes() + pageBytes();
}
char *FiberStacks::top(size_t index) const {
  return bottom(index) + kStackBytes;
}

#if defined(__x86_64__)

// lowbit_emu_switch(void **saveStackPointer, void *loadStackPointer):
// pushes the callee-saved registers, MXCSR and the x87 control word, stores
// the stack pointer, loads the other one and pops the same set. A new
// fiber's stack is laid out as if it had switched out just before
// lowbit_emu_fiber_start, which calls r13(r12) with an aligned stack.
asm(R"(
  .text
  .p2align 4
  .globl lowbit_emu_switch
  .type lowbit_emu_switch,@function
lowbit_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size lowbit_emu_switch, .-lowbit_emu_switch

  .p2align 4
  .globl lowbit_emu_fiber_start
  .type lowbit_emu_fiber_start,@function
lowbit_emu_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size lowbit_emu_fiber_start, .-lowbit_emu_fiber_start
)");

extern "C" void lowbit_emu_switch(void **saveStackPointer,
                                  void *loadStackPointer);
extern "C" void lowbit_emu_fiber_start();

struct FiberContext {
  void *stackPointer = nullptr;
  StackBounds stack;
  void (*entry)(void *) = nullptr;
  void *argument = nullptr;
};

namespace {
/// Where a new fiber begins: completes the switch that started it, then
/// runs its entry (which never returns).
void fiberMain(void *context) {
  finishSwitch(nullptr);
  auto *fiber = static_cast<FiberContext *>(context);
  fiber->entry(fiber->argument);
}
} // namespace

void Fiber::prepare(char *stackBottom, char *stackTop, void (*entry)(void *),
                    void *argument) {
  clearStackShadow(stackBottom, stackTop);
  context->stack = {stackBottom, size_t(stackTop - stackBottom)};
  context->entry = entry;
  context->argument = argument;
  auto top = reinterpret_cast<uintptr_t>(stackTop) & ~uintptr_t(15);
  // 8 slots: control words, r15, r14, r13, r12, rbx, rbp, return address.
  // After popping them rsp = top - 16, 16-byte aligned for the call.
  auto *slots = reinterpret_cast<uint64_t *>(top - 16 - 8 * 8);
  uint32_t mxcsr = 0;
  uint16_t x87 = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(x87));
  slots[0] = uint64_t(mxcsr) | (uint64_t(x87) << 32);
  slots[1] = 0;                                         // r15
  slots[2] = 0;                                         // r14
  slots[3] = reinterpret_cast<uint64_t>(&fiberMain);    // r13
  slots[4] = reinterpret_cast<uint64_t>(context.get()); // r12
  slots[5] = 0;                                         // rbx
  slots[6] = 0;                                         // rbp
  slots[7] = reinterpret_cast<uint64_t>(&lowbit_emu_fiber_start);
  context->stackPointer = slots;
}

void Fiber::switchTo(Fiber &from, Fiber &to) {
  void *fakeStack = nullptr;
  startSwitch(from.context->stack, to.context->stack, &fakeStack);
  lowbit_emu_switch(&from.context->stackPointer, to.context->stackPointer);
  finishSwitch(fakeStack);
}

void Fiber::exitTo(Fiber &from, Fiber &to) {
  startSwitch(from.context->stack, to.context->stack, nullptr);
  lowbit_emu_switch(&from.context->stackPointer, to.context->stackPointer);
  __builtin_unreachable();
}

#else

struct FiberContext {
  ucontext_t context;
  StackBounds stack;
  void (*entry)(void *) = nullptr;
  void *argument = nullptr;
};

void Fiber::prepare(char *stackBottom, char *stackTop, void (*entry)(void *),
                    void *argument) {
  clearStackShadow(stackBottom, stackTop);
  context->stack = {stackBottom, size_t(stackTop - stackBottom)};
  context->entry = entry;
  context->argument = argument;
  getcontext(&context->context);
  context->context.uc_stack.ss_sp = stackBottom;
  context->context.uc_stack.ss_size = size_t(stackTop - stackBottom);
  context->context.uc_link = nullptr;
  // makecontext passes int arguments: split the pointer.
  auto bits = reinterpret_cast<uintptr_t>(context.get());
  makecontext(&context->context,
              reinterpret_cast<void (*)()>(+[](unsigned low, unsigned high) {
                finishSwitch(nullptr);
                auto *fiber = reinterpret_cast<FiberContext *>(
                    uintptr_t(low) | (uintptr_t(high) << 32));
                fiber->entry(fiber->argument);
              }),
              2, unsigned(bits), unsigned(uint64_t(bits) >> 32));
}

void Fiber::switchTo(Fiber &from, Fiber &to) {
  void *fakeStack = nullptr;
  startSwitch(from.context->stack, to.context->stack, &fakeStack);
  swapcontext(&from.context->context, &to.context->context);
  finishSwitch(fakeStack);
}

void Fiber::exitTo(Fiber &from, Fiber &to) {
  startSwitch(from.context->stack, to.context->stack, nullptr);
  swapcontext(&from.context->context, &to.context->context);
  __builtin_unreachable();
}

#endif

Fiber::Fiber() : context(std::make_unique<FiberContext>()) {}
Fiber::~Fiber() = default;
Fiber::Fiber(Fiber &&) noexcept = default;
Fiber &Fiber::operator=(Fiber &&) noexcept = default;

} // namespace lowbit::emulator
