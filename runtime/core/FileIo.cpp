//===- FileIo.cpp - The file system calls of lowbit's writers -------------===//

#include "runtime/core/FileIo.h"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lowbit::runtime {
namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

/// The parsed LOWBIT_TEST_FAIL_AT: the step number and what it does.
struct FaultPlan {
  long step = 0; ///< 0: no fault
  int code = EIO;
  /// A signal the process sends itself at the step instead (kill: SIGKILL;
  /// SIGINT and SIGTERM test the interrupt cleanup).
  int signal = 0;
};

std::optional<int> errnoNamed(std::string_view name) {
  static constexpr std::pair<std::string_view, int> kNames[] = {
      {"EIO", EIO},       {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT},
      {"EACCES", EACCES}, {"EROFS", EROFS},   {"EINVAL", EINVAL},
      {"EXDEV", EXDEV}};
  for (auto [known, code] : kNames)
    if (known == name)
      return code;
  return std::nullopt;
}

FaultPlan readFaultPlan() {
  FaultPlan plan;
  const char *text = std::getenv("LOWBIT_TEST_FAIL_AT");
  if (!text || !*text)
    return plan;
  std::string_view value(text);
  std::string_view what;
  if (size_t colon = value.find(':'); colon != std::string_view::npos) {
    what = value.substr(colon + 1);
    value = value.substr(0, colon);
  }
  auto [end, status] =
      std::from_chars(value.data(), value.data() + value.size(), plan.step);
  std::optional<int> code = what.empty() ? EIO : errnoNamed(what);
  static constexpr std::pair<std::string_view, int> kSignals[] = {
      {"kill", SIGKILL}, {"SIGINT", SIGINT}, {"SIGTERM", SIGTERM}};
  for (auto [name, number] : kSignals)
    if (what == name)
      plan.signal = number;
  if (status != std::errc() || end != value.data() + value.size() ||
      plan.step < 1 || (!code && !plan.signal)) {
    // A mistyped hook must not look like a passing test: fail every step.
    std::fprintf(stderr,
                 "lowbit: LOWBIT_TEST_FAIL_AT='%s' is not "
                 "N[:ERRNO|:kill|:SIGINT|:SIGTERM]\n",
                 text);
    plan.step = -1;
    plan.code = EINVAL;
    return plan;
  }
  plan.code = code.value_or(EIO);
  return plan;
}

std::atomic<long> stepCounter{0};
thread_local bool lastFaultInjected = false;

} // namespace

int faultStep(std::string_view what) {
  static const FaultPlan plan = readFaultPlan();
  static const bool trace = [] {
    const char *text = std::getenv("LOWBIT_TEST_TRACE_IO");
    return text && std::string_view(text) == "1";
  }();
  lastFaultInjected = false;
  if (plan.step == 0 && !trace)
    return 0;
  long step = ++stepCounter;
  if (trace)
    std::fprintf(stderr, "lowbit: io step %ld: %.*s\n", step, int(what.size()),
                 what.data());
  if (plan.step != -1 && step != plan.step)
    return 0;
  if (plan.signal)
    ::kill(::getpid(), plan.signal);
  lastFaultInjected = true;
  return plan.code;
}

std::string ioError(std::string_view action, const std::string &path,
                    int code) {
  std::string message =
      std::string(action) + " '" + path + "': " + std::strerror(code);
  if (lastFaultInjected)
    message += " (injected by LOWBIT_TEST_FAIL_AT)";
  return message;
}

PieceSource singlePiece(std::string_view bytes) {
  return
      [bytes, given = false](std::string_view &piece, std::string *) mutable {
        piece = given ? std::string_view() : bytes;
        given = true;
        return true;
      };
}

bool writeNewFile(int directoryFd, const std::string &name,
                  std::string_view bytes, const std::string &displayPath,
                  std::string *error) {
  return writeNewFileFrom(directoryFd, name, singlePiece(bytes), displayPath,
                          error);
}

bool writeNewFileFrom(int directoryFd, const std::string &name,
                      const PieceSource &next, const std::string &displayPath,
                      std::string *error) {
  int code = faultStep("create " + displayPath);
  int fd = -1;
  if (!code) {
    fd = ::openat(directoryFd, name.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      code = errno;
  }
  if (code) {
    setError(error, ioError("cannot create", displayPath, code));
    return false;
  }
  auto removeFile = [&] {
    if (fd >= 0)
      ::close(fd);
    ::unlinkat(directoryFd, name.c_str(), 0);
    return false;
  };
  auto failWith = [&](const char *action, int failure) {
    setError(error, ioError(action, displayPath, failure));
    return removeFile();
  };
  if (int fault = faultStep("write " + displayPath))
    return failWith("cannot write", fault);
  std::string_view piece;
  while (true) {
    if (!next(piece, error))
      return removeFile();
    if (piece.empty())
      break;
    size_t written = 0;
    while (written < piece.size()) {
      ssize_t count =
          ::write(fd, piece.data() + written, piece.size() - written);
      if (count < 0 && errno == EINTR)
        continue;
      if (count <= 0)
        return failWith("cannot write", count < 0 ? errno : ENOSPC);
      written += size_t(count);
    }
  }
  if (int fault = faultStep("fsync " + displayPath))
    return failWith("cannot sync", fault);
  if (::fsync(fd) != 0)
    return failWith("cannot sync", errno);
  int closeFault = faultStep("close " + displayPath);
  int closed = ::close(fd);
  fd = -1;
  if (closeFault || closed != 0)
    return failWith("cannot close", closeFault ? closeFault : errno);
  return true;
}

bool makeDirectory(const std::string &path, std::string *error) {
  int code = faultStep("mkdir " + path);
  if (!code && ::mkdir(path.c_str(), 0755) != 0)
    code = errno;
  if (code)
    setError(error, ioError("cannot create directory", path, code));
  return !code;
}

bool syncDirectoryFd(int directoryFd, const std::string &displayPath,
                     std::string *error) {
  int code = faultStep("fsync directory " + displayPath);
  if (!code && ::fsync(directoryFd) != 0)
    code = errno;
  if (code)
    setError(error, ioError("cannot sync directory", displayPath, code));
  return !code;
}

void syncDirectoryBestEffort(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  ::fsync(fd);
  ::close(fd);
}

bool renamePath(const std::string &from, const std::string &to,
                std::string *error, int *errnoOut) {
  int code = faultStep("rename " + from + " -> " + to);
  if (!code && ::rename(from.c_str(), to.c_str()) != 0)
    code = errno;
  if (code)
    setError(error, ioError("cannot rename '" + from + "' to", to, code));
  if (errnoOut)
    *errnoOut = code;
  return !code;
}

int exchangePaths(const std::string &from, const std::string &to) {
  if (int code = faultStep("exchange " + from + " <-> " + to))
    return code;
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(),
                  RENAME_EXCHANGE) != 0)
    return errno;
  return 0;
}

bool isDeadWritersTemporary(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix))
    return false;
  std::string_view rest = name.substr(prefix.size());
  long pid = 0;
  auto [next, status] =
      std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  if (status != std::errc() || next == rest.data() + rest.size() ||
      *next != '.' || pid <= 0)
    return false;
  return ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

bool readRegularFileAt(int directoryFd, const std::string &name,
                       size_t maxBytes, std::string &bytes,
                       const std::string &displayPath, std::string *error,
                       int *errnoOut) {
  auto failWith = [&](std::string message, int code) {
    setError(error, std::move(message));
    if (errnoOut)
      *errnoOut = code;
    return false;
  };
  // O_NONBLOCK: a FIFO planted at the name must not hang the open.
  int fd = ::openat(directoryFd, name.c_str(),
                    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return failWith(ioError("cannot open", displayPath, errno), errno);
  struct stat status;
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    return failWith("'" + displayPath + "' is not a regular file", EINVAL);
  }
  if (size_t(status.st_size) > maxBytes) {
    ::close(fd);
    return failWith(
        "'" + displayPath + "' has " + std::to_string(status.st_size) +
            " bytes, more than the " + std::to_string(maxBytes) + " expected",
        EFBIG);
  }
  bytes.resize(size_t(status.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t count = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (count < 0 && errno == EINTR)
      continue;
    if (count < 0) {
      int code = errno;
      ::close(fd);
      return failWith(ioError("cannot read", displayPath, code), code);
    }
    if (count == 0)
      break;
    done += size_t(count);
  }
  bytes.resize(done);
  // A file that grew while being read is not the file that was checked.
  char extra;
  bool grew = ::read(fd, &extra, 1) > 0;
  ::close(fd);
  if (grew)
    return failWith("'" + displayPath + "' changed while it was read", EAGAIN);
  return true;
}

} // namespace lowbit::runtime
