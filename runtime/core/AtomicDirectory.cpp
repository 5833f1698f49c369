//===- AtomicDirectory.cpp - A set of files replaced as one unit ----------===//

#include "runtime/core/AtomicDirectory.h"
#include "runtime/core/FileIo.h"
#include "runtime/core/InterruptCleanup.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lowbit::runtime {
namespace fs = std::filesystem;
namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

std::string temporaryPrefix(const fs::path &target) {
  return "." + target.filename().string() + ".lowbit-tmp.";
}

/// ".NAME.lowbit-tmp.<pid>.<n>" beside `target`.
fs::path temporaryFor(const fs::path &target) {
  static std::atomic<unsigned> counter{0};
  return target.parent_path() /
         (temporaryPrefix(target) + std::to_string(::getpid()) + "." +
          std::to_string(counter++));
}

/// The directory --out names: absolute, without a trailing '/', through a
/// symlink to the directory it points at.
std::optional<fs::path> resolveTarget(const std::string &target,
                                      std::string *error) {
  std::error_code code;
  fs::path path = fs::absolute(target, code).lexically_normal();
  if (!code && path.filename().empty())
    path = path.parent_path();
  std::error_code missing; // not_found is not an error here
  if (!code && fs::is_symlink(fs::symlink_status(path, missing)))
    path = fs::canonical(path, code);
  std::string name = path.filename().string();
  if (code || name.empty() || name == "." || name == ".." ||
      path == path.root_path()) {
    setError(error, "'" + target + "' cannot be an output directory" +
                        (code ? ": " + code.message() : std::string()));
    return std::nullopt;
  }
  return path;
}

/// Creates the missing ancestors of `directory`; appends each one made to
/// `created`, outermost first.
bool createParents(const fs::path &directory, std::vector<fs::path> &created,
                   std::string *error) {
  std::vector<fs::path> missing;
  std::error_code code;
  for (fs::path path = directory; !path.empty() && !fs::exists(path, code);
       path = path.parent_path()) {
    missing.push_back(path);
    if (path == path.parent_path())
      break;
  }
  std::reverse(missing.begin(), missing.end());
  for (const fs::path &path : missing) {
    if (!makeDirectory(path.string(), error))
      return false;
    created.push_back(path);
  }
  return true;
}

/// Refuses to replace anything but a directory of lowbit's own files.
bool checkReplaceable(const fs::path &target,
                      const std::function<bool(std::string_view)> &accept,
                      std::string *error) {
  std::error_code code;
  fs::file_status status = fs::symlink_status(target, code);
  if (code || status.type() == fs::file_type::not_found)
    return true;
  if (status.type() != fs::file_type::directory) {
    setError(error, "'" + target.string() +
                        "' exists and is not a directory; refusing to "
                        "replace it");
    return false;
  }
  fs::directory_iterator entries(target, code), end;
  for (; !code && entries != end; entries.increment(code)) {
    std::string name = entries->path().filename().string();
    if (!accept(name)) {
      setError(error, "'" + target.string() + "' holds '" + name +
                          "', which is not part of a lowbit output; "
                          "refusing to replace the directory");
      return false;
    }
  }
  if (code) {
    setError(error, "cannot list '" + target.string() + "': " + code.message());
    return false;
  }
  return true;
}

/// Puts the complete directory `staged` at `target`. On success `old` names
/// what must be removed afterwards (the previous set), or is empty.
bool swapIntoPlace(const fs::path &staged, const fs::path &target,
                   fs::path &old, std::string *error) {
  // A concurrent writer can create or replace `target` between two tries;
  // each try either installs this set whole or changes nothing.
  for (int attempt = 0; attempt < 16; ++attempt) {
    int code = exchangePaths(staged.string(), target.string());
    if (code == 0) {
      old = staged;
      return true;
    }
    if (code == ENOENT) {
      int renameCode = 0;
      if (renamePath(staged.string(), target.string(), error, &renameCode))
        return true;
      if (renameCode == EEXIST || renameCode == ENOTEMPTY)
        continue;
      return false;
    }
    if (code != EINVAL && code != ENOSYS && code != EOPNOTSUPP) {
      setError(error, ioError("cannot replace", target.string(), code));
      return false;
    }
    // No RENAME_EXCHANGE here: move the old set aside, then the new one in.
    fs::path aside = temporaryFor(target);
    int asideCode = 0;
    if (!renamePath(target.string(), aside.string(), error, &asideCode)) {
      if (asideCode == ENOENT)
        continue; // gone meanwhile: try again
      return false;
    }
    if (!renamePath(staged.string(), target.string(), error)) {
      // Put the old set back; if even that fails it stays in `aside`, whole.
      ::rename(aside.c_str(), target.c_str());
      return false;
    }
    old = aside;
    return true;
  }
  setError(error, "'" + target.string() +
                      "' kept changing under concurrent writers; gave up");
  return false;
}

} // namespace

void sweepStaleDirectories(const std::string &target) {
  fs::path path(target);
  std::string prefix = temporaryPrefix(path);
  std::error_code code;
  fs::path parent = path.parent_path().empty() ? "." : path.parent_path();
  fs::directory_iterator entries(parent, code), end;
  for (; !code && entries != end; entries.increment(code)) {
    if (!isDeadWritersTemporary(entries->path().filename().string(), prefix))
      continue;
    std::error_code ignored;
    fs::remove_all(entries->path(), ignored);
  }
}

bool replaceDirectory(
    const std::string &targetText, const std::vector<DirectoryFile> &files,
    const std::function<bool(std::string_view)> &isReplaceable,
    std::string *error) {
  std::optional<fs::path> resolved = resolveTarget(targetText, error);
  if (!resolved)
    return false;
  const fs::path &target = *resolved;
  std::vector<fs::path> createdParents;
  fs::path staged;
  int stagedFd = -1;
  auto cleanUp = [&] {
    if (stagedFd >= 0)
      ::close(stagedFd);
    std::error_code ignored;
    if (!staged.empty())
      fs::remove_all(staged, ignored);
    for (auto it = createdParents.rbegin(); it != createdParents.rend(); ++it)
      fs::remove(*it, ignored); // only if still empty
    return false;
  };
  if (!createParents(target.parent_path(), createdParents, error))
    return cleanUp();
  sweepStaleDirectories(target.string());
  if (!checkReplaceable(target, isReplaceable, error))
    return cleanUp();

  fs::path temporary = temporaryFor(target);
  // Registered before it exists: an interrupt removes the staged set (and,
  // once swapped, the old set that takes its name).
  InterruptTemporary stagedOnInterrupt(temporary.string(), true);
  if (!makeDirectory(temporary.string(), error))
    return cleanUp();
  staged = temporary;
  stagedFd = ::open(staged.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (stagedFd < 0) {
    setError(error, ioError("cannot open directory", staged.string(), errno));
    return cleanUp();
  }
  for (const DirectoryFile &file : files)
    if (!writeNewFile(stagedFd, file.name, file.bytes,
                      (staged / file.name).string(), error))
      return cleanUp();
  if (!syncDirectoryFd(stagedFd, staged.string(), error))
    return cleanUp();
  ::close(stagedFd);
  stagedFd = -1;

  fs::path old;
  if (!swapIntoPlace(staged, target, old, error))
    return cleanUp();
  // The new set is in place: the old one, wherever the swap left it, may go.
  std::optional<InterruptTemporary> oldOnInterrupt;
  if (!old.empty() && old != staged)
    oldOnInterrupt.emplace(old.string(), true);
  // The new set is in place and is the result: a failure from here on
  // cannot undo it, so the parent's fsync is best effort and a leftover
  // old set is swept by the next run.
  syncDirectoryBestEffort(target.parent_path().string());
  std::error_code ignored;
  if (!old.empty())
    fs::remove_all(old, ignored);
  return true;
}

DirectoryReader::~DirectoryReader() {
  if (fd >= 0)
    ::close(fd);
}

bool DirectoryReader::open(const std::string &directory, std::string *error) {
  path = directory;
  fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    setError(error, ioError("cannot open directory", directory, errno));
    return false;
  }
  return true;
}

std::vector<std::string> DirectoryReader::names() const {
  std::vector<std::string> result;
  int copy = ::dup(fd);
  if (copy < 0)
    return result;
  DIR *stream = ::fdopendir(copy);
  if (!stream) {
    ::close(copy);
    return result;
  }
  ::rewinddir(stream);
  while (dirent *entry = ::readdir(stream)) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..")
      result.emplace_back(name);
  }
  ::closedir(stream);
  std::sort(result.begin(), result.end());
  return result;
}

bool DirectoryReader::read(const std::string &name, size_t maxBytes,
                           std::string &bytes, std::string *error,
                           int *errnoOut) const {
  return readRegularFileAt(fd, name, maxBytes, bytes,
                           (fs::path(path) / name).string(), error, errnoOut);
}

bool DirectoryReader::stillAt() const {
  struct stat opened, current;
  return ::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &current) == 0 &&
         opened.st_dev == current.st_dev && opened.st_ino == current.st_ino;
}

} // namespace lowbit::runtime
