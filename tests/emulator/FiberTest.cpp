//===- FiberTest.cpp - The emulator's context switch ----------------------===//
//
// Fibers resume where they left off, keep their own stacks and floating
// point state, and a switch is far cheaper than ucontext's (which makes a
// sigprocmask system call each time); the numbers are printed for
// docs/emulator.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/emulator/Fiber.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <ucontext.h>
#include <unistd.h>

using namespace lowbit::emulator;

namespace {

struct PingPong {
  Fiber main, worker;
  long rounds = 0, seen = 0;
  double sum = 0;
};

void pingPongWorker(void *argument) {
  auto &state = *static_cast<PingPong *>(argument);
  double local = 0.5; // lives on the fiber's stack across switches
  while (true) {
    ++state.seen;
    local += 1.0;
    state.sum = local;
    Fiber::switchTo(state.worker, state.main);
  }
}

double nanosPerSwitch(long rounds, void (*body)(long)) {
  auto start = std::chrono::steady_clock::now();
  body(rounds);
  double nanos = std::chrono::duration<double, std::nano>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  return nanos / double(2 * rounds);
}

ucontext_t mainContext, workerContext;
void ucontextWorker() {
  while (true)
    swapcontext(&workerContext, &mainContext);
}

struct Ending {
  Fiber main, worker;
  long ended = 0;
};

/// Takes the address of a local, as the emulated kernels do, so that under
/// ASan's stack-use-after-return detection the frame lives on the fake stack.
void endingWorker(void *argument) {
  auto &state = *static_cast<Ending *>(argument);
  volatile long local = 1;
  state.ended += *const_cast<long *>(&local);
  Fiber::exitTo(state.worker, state.main);
}

/// The process's mapped bytes (statm's first field counts pages).
long mappedBytes() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0;
  statm >> pages;
  return pages * sysconf(_SC_PAGESIZE);
}

} // namespace

// Each emulated GPU thread is a fiber that ends, thousands per launch. A
// fiber that ended with an ordinary switch kept ASan's fake stack (a
// mapping of about a megabyte), and `lowbit demo` grew to 15 GB under the
// sanitizers (docs/testing.md).
TEST_CASE("emulator: an ended fiber leaves no mapping behind", "[emulator]") {
  FiberStacks stacks;
  REQUIRE(stacks.reserve(1));
  Ending state;
  constexpr long kFibers = 5000;
  long before = mappedBytes();
  for (long i = 0; i < kFibers; ++i) {
    state.worker.prepare(stacks.bottom(0), stacks.top(0), &endingWorker,
                         &state);
    Fiber::switchTo(state.main, state.worker);
  }
  CHECK(state.ended == kFibers);
  // A kept fake stack maps at least 64 KiB per fiber: 300+ MiB here.
  CHECK(mappedBytes() - before < (64l << 20));
}

TEST_CASE("emulator: fibers switch and keep their state", "[emulator]") {
  FiberStacks stacks;
  REQUIRE(stacks.reserve(2));
  PingPong state;
  state.worker.prepare(stacks.bottom(0), stacks.top(0), &pingPongWorker,
                       &state);
  for (int i = 0; i < 1000; ++i)
    Fiber::switchTo(state.main, state.worker);
  CHECK(state.seen == 1000);
  CHECK(state.sum == 1000.5);

  static PingPong *timed = &state;
  double fiberNanos = nanosPerSwitch(1000000, [](long rounds) {
    for (long i = 0; i < rounds; ++i)
      Fiber::switchTo(timed->main, timed->worker);
  });
  CHECK(state.seen == 1001000);

  static std::vector<char> stack(64 * 1024);
  getcontext(&workerContext);
  workerContext.uc_stack.ss_sp = stack.data();
  workerContext.uc_stack.ss_size = stack.size();
  makecontext(&workerContext, &ucontextWorker, 0);
  double ucontextNanos = nanosPerSwitch(200000, [](long rounds) {
    for (long i = 0; i < rounds; ++i)
      swapcontext(&mainContext, &workerContext);
  });
  std::cout << "emulator: fiber switch " << fiberNanos
            << " ns, ucontext swapcontext " << ucontextNanos << " ns\n";
}
