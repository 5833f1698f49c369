//===- LoadedCompiler.cpp - The Jit's compiler, loaded on a miss ----------===//
//
// compilerBackend() for LowbitJitLoader: the compiler lives in
// liblowbit-compiler.so, which is dlopen'd (CompilerLoader.h) the first
// time the Jit must compile. Until then the process has loaded neither
// libMLIR nor libLLVM: a get() answered by the memory or disk cache never
// comes here.
//
//===----------------------------------------------------------------------===//

#include "runtime/jit/CompilerBackend.h"
#include "runtime/jit/CompilerLoader.h"

namespace lowbit::jit {

Expected<const CompilerBackend *> compilerBackend() {
  Expected<const CompilerLibrary *> library = compilerLibrary();
  if (!library)
    return std::move(library).takeError();
  return (*library)->backend;
}

} // namespace lowbit::jit
