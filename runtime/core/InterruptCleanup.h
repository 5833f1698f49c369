//===- InterruptCleanup.h - Temporaries gone on SIGINT/SIGTERM -*- C++ -*-===//
//
// A write in progress keeps its files in a temporary beside the target
// (AtomicDirectory, AtomicFile). Ctrl-C or SIGTERM used to leave it there
// until the next write beside it swept it. A program that calls
// installInterruptCleanup() (the lowbit CLI) instead removes every
// registered temporary in the signal handler, with async-signal-safe calls
// only, then dies of the signal as before. A library that is embedded (the
// Python module, an engine) installs nothing: its host owns the signals,
// and the registration below is then inert. Each copy of this file (the
// front end and liblowbit-compiler.so each link one) has its own table and
// installs its own handlers; a handler cleans its table, then passes the
// signal on to the handler it replaced, the last one dying of it.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CORE_INTERRUPTCLEANUP_H
#define LOWBIT_RUNTIME_CORE_INTERRUPTCLEANUP_H

#include <string>

namespace lowbit::runtime {

/// Installs the SIGINT and SIGTERM handlers (once; later calls do nothing).
void installInterruptCleanup();

/// Registers a temporary for removal by the handlers while it lives: a
/// file, or a directory of plain files (one level, as the staged sets
/// are). A path that does not fit the fixed table is not registered; the
/// next write beside it sweeps it as before.
class InterruptTemporary {
public:
  InterruptTemporary() = default;
  InterruptTemporary(const std::string &path, bool directory);
  InterruptTemporary(const InterruptTemporary &) = delete;
  InterruptTemporary &operator=(const InterruptTemporary &) = delete;
  ~InterruptTemporary() { release(); }
  /// The temporary is gone or has become the result: stop tracking it.
  void release();

private:
  int slot = -1;
};

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CORE_INTERRUPTCLEANUP_H
