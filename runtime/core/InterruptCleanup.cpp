//===- InterruptCleanup.cpp - Temporaries removed on SIGINT/SIGTERM -------===//
//
// The handler may run between any two instructions of a write, so the
// table it reads is fixed storage published with atomics (no allocation,
// no lock), and it calls only async-signal-safe functions (open, getdents64
// through syscall, unlinkat, rmdir, close, sigaction, raise).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/InterruptCleanup.h"

#include <atomic>
#include <climits>
#include <csignal>
#include <cstring>
#include <mutex>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace lowbit::runtime {

namespace {

constexpr int kSlots = 32;

enum SlotState : int { Free, Claimed, File, Directory };

struct Slot {
  std::atomic<int> state{Free};
  char path[PATH_MAX];
};

Slot slots[kSlots];
struct sigaction previousInt, previousTerm;

/// Removes a directory's plain entries, then the directory.
void removeDirectory(const char *path) {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    alignas(8) char buffer[4096];
    for (;;) {
      long bytes = ::syscall(SYS_getdents64, fd, buffer, sizeof(buffer));
      if (bytes <= 0)
        break;
      for (long offset = 0; offset < bytes;) {
        // struct linux_dirent64: ino, off, reclen, type, name.
        unsigned short length;
        std::memcpy(&length, buffer + offset + 16, sizeof(length));
        const char *name = buffer + offset + 19;
        if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0)
          ::unlinkat(fd, name, 0);
        offset += length;
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

void onSignal(int signal) {
  int saved = errno;
  for (Slot &slot : slots) {
    int state = slot.state.load(std::memory_order_acquire);
    if (state == File)
      ::unlink(slot.path);
    else if (state == Directory)
      removeDirectory(slot.path);
  }
  errno = saved;
  // Die of the signal as before (the shell sees 130 / 143), or run the
  // handler that was there.
  ::sigaction(signal, signal == SIGINT ? &previousInt : &previousTerm, nullptr);
  ::raise(signal);
}

} // namespace

void installInterruptCleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    // Both signals blocked while one is handled: one cleanup at a time.
    sigaddset(&action.sa_mask, SIGINT);
    sigaddset(&action.sa_mask, SIGTERM);
    // A signal ignored when the program started (a background job's
    // SIGINT, nohup) stays ignored: the process must not die of it.
    for (auto [signal, previous] :
         {std::pair{SIGINT, &previousInt}, std::pair{SIGTERM, &previousTerm}}) {
      ::sigaction(signal, nullptr, previous);
      if (previous->sa_handler != SIG_IGN)
        ::sigaction(signal, &action, nullptr);
    }
  });
}

InterruptTemporary::InterruptTemporary(const std::string &path,
                                       bool directory) {
  if (path.size() >= PATH_MAX)
    return;
  for (int index = 0; index < kSlots; ++index) {
    int expected = Free;
    if (!slots[index].state.compare_exchange_strong(expected, Claimed))
      continue;
    std::memcpy(slots[index].path, path.c_str(), path.size() + 1);
    // Published only now: the handler never reads a half-written path.
    slots[index].state.store(directory ? Directory : File,
                             std::memory_order_release);
    slot = index;
    return;
  }
}

void InterruptTemporary::release() {
  if (slot < 0)
    return;
  slots[slot].state.store(Free, std::memory_order_release);
  slot = -1;
}

} // namespace lowbit::runtime
