//===- SanitizerDefaults.cpp - Sanitizer options built into each binary ---===//
//
// cmake/Sanitizers.cmake links this object into every executable of the
// LOWBIT_SANITIZE configuration, so a test, a tool or a fuzz target run by
// hand behaves as under tools/run-sanitizers. ASAN_OPTIONS, UBSAN_OPTIONS
// and LSAN_OPTIONS from the environment are applied after these.
//
//===----------------------------------------------------------------------===//

extern "C" {

// allow_user_poisoning=0: LLVM's headers poison and unpoison the slabs of
// llvm::BumpPtrAllocator (llvm/Support/Allocator.h) when the including
// file is built with ASan. lowbit's files are; Debian's libMLIR.so is not.
// The MLIRContext's allocators are shared, so a slab that an inlined,
// instrumented StartNewSlab poisoned is then handed out by libMLIR's
// uninstrumented Allocate, which never unpoisons, and the next memmove into
// it is reported (use-after-poison inside mlir::StringAttr::get, found by
// the dialect-attr fuzzer). Only this manual poisoning is switched off:
// heap, stack and global checks are unchanged, and lowbit's own code does
// not poison memory.
const char *__asan_default_options() { return "allow_user_poisoning=0"; }

const char *__ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1";
}

// NVIDIA's libnvJitLink (closed, uninstrumented) keeps about 1 KB in 19
// allocations made inside nvJitLinkCreate/Complete for the process's
// lifetime; LeakSanitizer reported them at exit of every `lowbit` run that
// linked PTX (lit cli/aot.test, found by the sanitizer build). lowbit
// destroys each handle (runtime/driver/NvJitLink.cpp, HandleGuard). Only
// leaks allocated from inside that library are suppressed.
const char *__lsan_default_suppressions() { return "leak:libnvJitLink.so\n"; }

} // extern "C"
