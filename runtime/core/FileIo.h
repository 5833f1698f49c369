//===- FileIo.h - The file system calls of lowbit's writers -----*- C++ -*-===//
//
// Every write, fsync, rename and mkdir of an output (AtomicFile,
// AtomicDirectory) goes through these few functions, so that errors carry
// the system's reason (strerror: "No space left on device") and so that a
// test can make any one of them fail.
//
// Test hook, compiled into every build and documented in
// docs/quantization.md ("Quantized directories"):
//   LOWBIT_TEST_FAIL_AT=N[:WHAT]   the Nth step of the process fails
// Steps are counted from 1 in the order they run; WHAT is an errno name
// (EIO, the default, ENOSPC, EDQUOT, EACCES, EROFS, EINVAL, EXDEV) that the
// step fails with, or `kill` (the process kills itself with SIGKILL at that
// step, as a crash or kill -9 would), or SIGINT or SIGTERM (it sends itself
// that signal, for the interrupt cleanup of InterruptCleanup.h).
// LOWBIT_TEST_TRACE_IO=1 prints each
// step ("lowbit: io step 3: rename ...") on stderr, so a test can count
// them. Neither variable changes anything when unset.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CORE_FILEIO_H
#define LOWBIT_RUNTIME_CORE_FILEIO_H

#include <functional>
#include <string>
#include <string_view>

namespace lowbit::runtime {

/// Counts one step; returns 0 to go on, or the errno it must fail with.
int faultStep(std::string_view what);

/// "<action> '<path>': <strerror(code)>", marked when the hook injected it.
std::string ioError(std::string_view action, const std::string &path, int code);

/// Creates `name` (which must not exist) in `directoryFd` (or AT_FDCWD),
/// writes `bytes`, fsyncs and closes it; each is a step. On failure the file
/// is removed and `error` names `displayPath` and the reason.
bool writeNewFile(int directoryFd, const std::string &name,
                  std::string_view bytes, const std::string &displayPath,
                  std::string *error);

/// Produces a file's bytes piece by piece: points `piece` at the next bytes
/// (valid until the next call; empty: the end) and returns true, or
/// returns false with `error` set.
using PieceSource =
    std::function<bool(std::string_view &piece, std::string *error)>;

/// A source of `bytes` as one piece.
PieceSource singlePiece(std::string_view bytes);

/// writeNewFile with the bytes from `next`, appended as they come, so a
/// file larger than memory (a checkpoint shard) is written without being
/// assembled first. The steps are the same; a failure of `next` removes
/// the file too.
bool writeNewFileFrom(int directoryFd, const std::string &name,
                      const PieceSource &next, const std::string &displayPath,
                      std::string *error);

/// mkdir (mode 0755), one step.
bool makeDirectory(const std::string &path, std::string *error);
/// fsync of an open directory; one step.
bool syncDirectoryFd(int directoryFd, const std::string &displayPath,
                     std::string *error);
/// fsync of the directory at `path` after a rename that is already the
/// result (not a step: nothing can be undone by then); errors are ignored.
void syncDirectoryBestEffort(const std::string &path);
/// rename(2), one step; `errnoOut` receives the reason on failure.
bool renamePath(const std::string &from, const std::string &to,
                std::string *error, int *errnoOut = nullptr);
/// renameat2(RENAME_EXCHANGE), one step: swaps two existing paths
/// atomically. Returns 0 or the errno (ENOENT: `to` does not exist;
/// EINVAL/ENOSYS: the file system cannot exchange).
int exchangePaths(const std::string &from, const std::string &to);

/// Whether `name` is `prefix` + "<pid>.<n>", a temporary of a writer
/// process that is gone (kill(pid, 0) says ESRCH): safe to sweep. A live or
/// unknown pid's temporary is kept.
bool isDeadWritersTemporary(std::string_view name, std::string_view prefix);

/// Reads the regular file `name` in `directoryFd` (no symlinks followed):
/// refuses anything but a regular file and one larger than `maxBytes`.
bool readRegularFileAt(int directoryFd, const std::string &name,
                       size_t maxBytes, std::string &bytes,
                       const std::string &displayPath, std::string *error,
                       int *errnoOut = nullptr);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CORE_FILEIO_H
