//===- MappedFile.cpp - A whole file mapped read-only ---------------------===//

#include "checkpoint/MappedFile.h"

#include "runtime/core/AtomicFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace lowbit::checkpoint {

Expected<MappedFile> MappedFile::open(const std::string &path) {
  auto ioFailure = [&](std::string_view action) {
    return makeError(ErrorCode::Io, std::string(action) + " '" + path +
                                        "': " + std::strerror(errno));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ioFailure("cannot open");
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    Error error = ioFailure("cannot stat");
    ::close(fd);
    return error;
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return makeError(ErrorCode::InvalidArgument,
                     "'" + path + "' is not a regular file");
  }
  MappedFile file;
  file.size = static_cast<size_t>(info.st_size);
  if (file.size > 0) {
    void *address = ::mmap(nullptr, file.size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      Error error = ioFailure("cannot map");
      ::close(fd);
      return error;
    }
    file.mapping = static_cast<const std::byte *>(address);
  }
  ::close(fd);
  return file;
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : mapping(std::exchange(other.mapping, nullptr)),
      size(std::exchange(other.size, 0)) {}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this == &other)
    return *this;
  if (mapping)
    ::munmap(const_cast<std::byte *>(mapping), size);
  mapping = std::exchange(other.mapping, nullptr);
  size = std::exchange(other.size, 0);
  return *this;
}

MappedFile::~MappedFile() {
  if (mapping)
    ::munmap(const_cast<std::byte *>(mapping), size);
}

void releasePages(std::span<const std::byte> range) {
  if (range.empty())
    return;
  uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  uintptr_t begin = uintptr_t(range.data()) / page * page;
  uintptr_t end =
      (uintptr_t(range.data()) + range.size() + page - 1) / page * page;
  // Advice only: a failure leaves the pages resident, nothing else.
  ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

Status writeFileAtomically(const std::string &path,
                           Expected<std::string> bytes) {
  if (!bytes)
    return std::move(bytes).takeError();
  std::string error;
  if (!runtime::writeFileAtomically(path, *bytes, &error))
    return makeError(ErrorCode::Io, error);
  return Status::success();
}

} // namespace lowbit::checkpoint
