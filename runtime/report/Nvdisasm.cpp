//===- Nvdisasm.cpp - The SASS of a cubin, through nvdisasm ---------------===//
//
// The cubin goes to a private temporary file (nvdisasm reads files only),
// nvdisasm runs without a shell (posix_spawn: no quoting of user paths),
// and its standard output is read through a pipe; the file is removed
// either way.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/Nvdisasm.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace lowbit::report {

namespace {

bool executable(const std::filesystem::path &path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) &&
         access(path.c_str(), X_OK) == 0;
}

/// Removes a file when it goes out of scope.
struct TemporaryFile {
  std::string path;
  ~TemporaryFile() {
    if (!path.empty())
      unlink(path.c_str());
  }
};

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      return false;
    bytes.remove_prefix(size_t(written));
  }
  return true;
}

std::string firstLine(const std::string &text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "no output" : line;
}

} // namespace

Expected<std::string> findNvdisasm() {
  if (const char *configured = std::getenv("LOWBIT_NVDISASM")) {
    if (*configured == '\0')
      return makeError(ErrorCode::LibraryNotFound,
                       "LOWBIT_NVDISASM is empty (SASS turned off)");
    if (executable(configured))
      return std::string(configured);
    return makeError(ErrorCode::LibraryNotFound,
                     std::string("LOWBIT_NVDISASM=") + configured +
                         " is not an executable file");
  }
  if (const char *path = std::getenv("PATH")) {
    std::string_view directories = path;
    while (!directories.empty()) {
      size_t colon = directories.find(':');
      std::string_view directory = directories.substr(0, colon);
      if (!directory.empty() &&
          executable(std::filesystem::path(directory) / "nvdisasm"))
        return (std::filesystem::path(directory) / "nvdisasm").string();
      if (colon == std::string_view::npos)
        break;
      directories.remove_prefix(colon + 1);
    }
  }
  const char *cudaHome = std::getenv("CUDA_HOME");
  std::filesystem::path toolkit =
      std::filesystem::path(cudaHome && *cudaHome ? cudaHome
                                                  : "/usr/local/cuda") /
      "bin" / "nvdisasm";
  if (executable(toolkit))
    return toolkit.string();
  return makeError(ErrorCode::LibraryNotFound,
                   "no nvdisasm (not in LOWBIT_NVDISASM, PATH or " +
                       toolkit.string() + ")");
}

Expected<std::string> disassembleCubin(std::string_view cubin) {
  Expected<std::string> tool = findNvdisasm();
  if (!tool)
    return tool.error();
  TemporaryFile file;
  std::string pattern =
      (std::filesystem::temp_directory_path() / "lowbit-report-XXXXXX.cubin")
          .string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkstemps(name.data(), 6);
  if (fd < 0)
    return makeError(ErrorCode::Io, "cannot create a temporary cubin: " +
                                        std::string(std::strerror(errno)));
  file.path = name.data();
  bool written = writeAll(fd, cubin);
  close(fd);
  if (!written)
    return makeError(ErrorCode::Io, "cannot write " + file.path);

  std::array<int, 2> pipeEnds{};
  if (pipe(pipeEnds.data()) != 0)
    return makeError(ErrorCode::Io,
                     "pipe: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipeEnds[0]);
  std::string codeOnly = "-c";
  std::vector<char *> argv = {tool->data(), codeOnly.data(), file.path.data(),
                              nullptr};
  pid_t child = 0;
  int spawned = posix_spawn(&child, tool->c_str(), &actions, nullptr,
                            argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipeEnds[1]);
  if (spawned != 0) {
    close(pipeEnds[0]);
    return makeError(ErrorCode::LibraryNotFound,
                     "cannot run " + *tool + ": " + std::strerror(spawned));
  }
  std::string output;
  std::array<char, 65536> buffer;
  for (;;) {
    ssize_t count = read(pipeEnds[0], buffer.data(), buffer.size());
    if (count < 0 && errno == EINTR)
      continue;
    if (count <= 0)
      break;
    output.append(buffer.data(), size_t(count));
  }
  close(pipeEnds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return makeError(ErrorCode::CompileFailed,
                     *tool + " failed: " + firstLine(output));
  return output;
}

} // namespace lowbit::report
