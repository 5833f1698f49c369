//===- AtomicFile.cpp - Writes that never leave half a file ---------------===//

#include "runtime/core/AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <unistd.h>

namespace lowbit::runtime {
namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

/// A name in the destination's directory (rename is atomic only within one
/// file system), unique per process and call.
std::string temporaryNameFor(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter++);
}

bool writeWhole(const std::string &path, std::string_view bytes,
                std::string *error) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream) {
    setError(error, "cannot create '" + path + "': " + std::strerror(errno));
    return false;
  }
  stream.write(bytes.data(), std::streamsize(bytes.size()));
  stream.close();
  if (!stream) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    setError(error, "cannot write '" + path + "'");
    return false;
  }
  return true;
}

} // namespace

bool writeFileAtomically(const std::string &path, std::string_view bytes,
                         std::string *error) {
  StagedFiles staged;
  return staged.stage(path, bytes, error) && staged.commit(error);
}

StagedFiles::~StagedFiles() {
  for (const Entry &entry : entries) {
    std::error_code ignored;
    std::filesystem::remove(entry.temporary, ignored);
  }
}

bool StagedFiles::stage(const std::string &path, std::string_view bytes,
                        std::string *error) {
  std::string temporary = temporaryNameFor(path);
  if (!writeWhole(temporary, bytes, error))
    return false;
  entries.push_back({temporary, path});
  return true;
}

bool StagedFiles::commit(std::string *error) {
  while (!entries.empty()) {
    const Entry &entry = entries.front();
    std::error_code code;
    std::filesystem::rename(entry.temporary, entry.destination, code);
    if (code) {
      setError(error, "cannot rename '" + entry.temporary + "' to '" +
                          entry.destination + "': " + code.message());
      return false; // the destructor removes the rest
    }
    entries.erase(entries.begin());
  }
  return true;
}

bool readFile(const std::string &path, std::string &bytes, std::string *error) {
  std::error_code code;
  if (std::filesystem::is_directory(path, code)) {
    setError(error, "'" + path + "' is a directory");
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
