//===- AtomicFile.cpp - Writes that never leave half a file ---------------===//

#include "runtime/core/AtomicFile.h"
#include "runtime/core/FileIo.h"
#include "runtime/core/InterruptCleanup.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace lowbit::runtime {
namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

/// A name in the destination's directory (rename is atomic only within one
/// file system), unique per process and call: "<path>.tmp.<pid>.<n>".
std::string temporaryNameFor(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter++);
}

/// The staged files' interrupt registrations (InterruptCleanup.h), by
/// temporary path: kept here so that StagedFiles' header stays as it is.
std::mutex trackedMutex;
std::map<std::string, std::unique_ptr<InterruptTemporary>> tracked;

void trackTemporary(const std::string &temporary) {
  std::lock_guard<std::mutex> lock(trackedMutex);
  tracked[temporary] = std::make_unique<InterruptTemporary>(temporary, false);
}

void untrackTemporary(const std::string &temporary) {
  std::lock_guard<std::mutex> lock(trackedMutex);
  tracked.erase(temporary);
}

std::string parentOf(const std::string &path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

} // namespace

void sweepStaleTemporaries(const std::string &path) {
  std::filesystem::path target(path);
  std::string prefix = target.filename().string() + ".tmp.";
  std::error_code code;
  std::filesystem::directory_iterator entries(parentOf(path), code), end;
  for (; !code && entries != end; entries.increment(code)) {
    if (!isDeadWritersTemporary(entries->path().filename().string(), prefix))
      continue;
    std::error_code ignored;
    std::filesystem::remove(entries->path(), ignored);
  }
}

bool writeFileAtomically(const std::string &path, std::string_view bytes,
                         std::string *error) {
  StagedFiles staged;
  return staged.stage(path, bytes, error) && staged.commit(error);
}

StagedFiles::~StagedFiles() {
  for (const Entry &entry : entries) {
    std::error_code ignored;
    std::filesystem::remove(entry.temporary, ignored);
    untrackTemporary(entry.temporary);
  }
}

bool StagedFiles::stage(const std::string &path, std::string_view bytes,
                        std::string *error) {
  return stageFrom(path, singlePiece(bytes), error);
}

bool StagedFiles::stageFrom(const std::string &path, const PieceSource &next,
                            std::string *error) {
  sweepStaleTemporaries(path);
  std::string temporary = temporaryNameFor(path);
  // Registered before it exists: an interrupt during the write removes it.
  trackTemporary(temporary);
  if (!writeNewFileFrom(AT_FDCWD, temporary, next, temporary, error)) {
    untrackTemporary(temporary);
    return false;
  }
  entries.push_back({temporary, path});
  return true;
}

bool StagedFiles::commit(std::string *error) {
  std::vector<std::string> directories;
  while (!entries.empty()) {
    const Entry &entry = entries.front();
    if (!renamePath(entry.temporary, entry.destination, error))
      return false; // the destructor removes the rest
    untrackTemporary(entry.temporary);
    directories.push_back(parentOf(entry.destination));
    entries.erase(entries.begin());
  }
  // The renames are durable once their directories are synced (best
  // effort: the files are in place and are the result by now).
  std::sort(directories.begin(), directories.end());
  directories.erase(std::unique(directories.begin(), directories.end()),
                    directories.end());
  for (const std::string &directory : directories)
    syncDirectoryBestEffort(directory);
  return true;
}

bool readFile(const std::string &path, std::string &bytes, std::string *error) {
  std::error_code code;
  std::filesystem::file_status status = std::filesystem::status(path, code);
  if (std::filesystem::is_directory(status)) {
    setError(error, "'" + path + "' is a directory");
    return false;
  }
  // A device never ends (/dev/zero, /dev/urandom: read until memory runs
  // out) or blocks (a terminal): a file named by a bundle manifest, or a
  // symlink in a bundle or quantized directory, may be one. A pipe is read,
  // so `--input <(...)` works.
  if (std::filesystem::is_character_file(status) ||
      std::filesystem::is_block_file(status) ||
      std::filesystem::is_socket(status)) {
    setError(error, "'" + path + "' is a device or socket, not a file");
    return false;
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    setError(error, "cannot open '" + path + "': " + std::strerror(errno));
    return false;
  }
  bytes.assign(std::istreambuf_iterator<char>(stream),
               std::istreambuf_iterator<char>());
  if (stream.bad()) {
    setError(error, "cannot read '" + path + "'");
    return false;
  }
  return true;
}

} // namespace lowbit::runtime
