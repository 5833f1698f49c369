// The runtime core must run where no LLVM is installed (AOT bundles on the
// GPU machine, engines that ship kernels without LLVM). This reads the
// DT_NEEDED entries of a program linked only from the runtime libraries,
// and of the lowbit executable, an MLIR-free front end (docs/runtime.md).

#include <catch2/catch.hpp>

#include <elf.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

/// The shared libraries an ELF64 executable names in its dynamic section.
std::vector<std::string> neededLibraries(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(stream), {});
  REQUIRE(bytes.size() > sizeof(Elf64_Ehdr));
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  REQUIRE(std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0);
  REQUIRE(header.e_ident[EI_CLASS] == ELFCLASS64);
  auto section = [&](size_t index) {
    Elf64_Shdr result;
    std::memcpy(&result,
                bytes.data() + header.e_shoff + index * header.e_shentsize,
                sizeof(result));
    return result;
  };
  std::vector<std::string> needed;
  for (size_t index = 0; index < header.e_shnum; ++index) {
    Elf64_Shdr dynamic = section(index);
    if (dynamic.sh_type != SHT_DYNAMIC)
      continue;
    Elf64_Shdr strings = section(dynamic.sh_link);
    for (size_t offset = 0; offset + sizeof(Elf64_Dyn) <= dynamic.sh_size;
         offset += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      std::memcpy(&entry, bytes.data() + dynamic.sh_offset + offset,
                  sizeof(entry));
      if (entry.d_tag == DT_NULL)
        break;
      if (entry.d_tag == DT_NEEDED)
        needed.emplace_back(bytes.data() + strings.sh_offset +
                            entry.d_un.d_val);
    }
  }
  return needed;
}

} // namespace

TEST_CASE("The runtime core links no MLIR, no LLVM and no CUDA library",
          "[runtime][mlir-free]") {
  for (const char *program :
       {LOWBIT_LINKCHECK_PATH, LOWBIT_RUNTIME_TESTS_PATH,
        LOWBIT_FRONT_END_PATH}) {
    INFO(program);
    std::vector<std::string> needed = neededLibraries(program);
    REQUIRE_FALSE(needed.empty()); // at least libc
    for (const std::string &library : needed) {
      INFO(library);
      CHECK(library.find("MLIR") == std::string::npos);
      CHECK(library.find("LLVM") == std::string::npos);
      CHECK(library.find("libcuda") == std::string::npos);
      CHECK(library.find("nvrtc") == std::string::npos);
      CHECK(library.find("nvJitLink") == std::string::npos);
    }
  }
}
