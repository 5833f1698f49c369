// The specialization key: stable hashes, what is and is not specialized.

#include "runtime/cache/KernelKey.h"
#include "runtime/cache/Hash.h"

#include <catch2/catch.hpp>

using namespace lowbit;
using namespace lowbit::runtime;

namespace {

std::shared_ptr<const PreparedSignature> prepare(KernelSignature signature) {
  auto prepared = prepareSignature(std::move(signature));
  REQUIRE(prepared.ok());
  return *prepared;
}

KernelSignature baseSignature() {
  KernelSignature signature;
  signature.spec = "quantize mxfp4 from=bf16 scale=dynamic dynamic";
  signature.chip = "sm_90a";
  signature.features = "+ptx86";
  signature.inputDtype = "bf16";
  signature.pointerCount = 3;
  signature.llvmVersion = "22.1.8";
  signature.pipelineHash = 0x1234;
  return signature;
}

alignas(64) char buffer[256];

} // namespace

TEST_CASE("XXH64 matches the published values", "[runtime][hash]") {
  CHECK(xxh64("", 0, 0) == 0xEF46DB3751D8E999ULL);
  CHECK(xxh64("abc", 3, 0) == 0x44BC2CF5AD770999ULL);
  // Every tail path (32-byte stripes, 8-, 4- and 1-byte steps) is stable
  // against itself at any alignment.
  std::string text(100, 'x');
  for (size_t index = 0; index < text.size(); ++index)
    text[index] = char(index * 7 + 3);
  for (size_t length = 0; length < 80; ++length) {
    std::string copy = text.substr(1, length);
    CHECK(xxh64(copy.data(), length, 0) == xxh64(text.data() + 1, length, 0));
    CHECK(hash128(copy) == hash128(text.data() + 1, length));
  }
  CHECK(Hash128{1, 2}.toHex() == "00000000000000020000000000000001");
}

TEST_CASE("A signature serializes every field, in a fixed order",
          "[runtime][key]") {
  auto prepared = prepare(baseSignature());
  const std::string &text = prepared->serialized();
  CHECK(text.starts_with("lowbit-kernel-key 2\nspec=quantize mxfp4"));
  for (const char *field :
       {"chip=sm_90a\n", "features=+ptx86\n", "input=bf16\n", "rows=dynamic\n",
        "cols=dynamic\n", "pointers=3\n", "llvm=22.1.8\n",
        "pipeline=0000000000001234\n"})
    CHECK(text.find(field) != std::string::npos);
  CHECK(text.find("lowbit=" + std::string(lowbitVersion())) !=
        std::string::npos);
  // The build's hash of the compiler's sources, not a version someone
  // must remember to bump.
  CHECK(compilerBuildHash().size() == 32);
  CHECK(compilerBuildHash().find_first_not_of("0123456789abcdef") ==
        std::string_view::npos);
  CHECK(text.find("compiler=" + std::string(compilerBuildHash()) + "\n") !=
        std::string::npos);
  // The hash is the hash of the text: the same on every machine and run.
  CHECK(prepared->hash() == hash128(text));
}

TEST_CASE("Every signature field changes the key", "[runtime][key]") {
  Hash128 base = prepare(baseSignature())->hash();
  std::vector<KernelSignature> variants(10, baseSignature());
  variants[0].spec += " ";
  variants[1].chip = "sm_89";
  variants[2].features = "+ptx85";
  variants[3].inputDtype = "f16";
  variants[4].rowsPolicy = SizePolicy::Static;
  variants[5].pointerCount = 2;
  variants[6].lowbitVersion = "0.0.1";
  variants[7].llvmVersion = "21.1.0";
  variants[8].pipelineHash = 0x1235;
  // Another build of the compiler (a changed pass, codec or template).
  variants[9].compilerBuild = "00000000000000000000000000000000";
  for (const KernelSignature &variant : variants)
    CHECK_FALSE(prepare(variant)->hash() == base);
}

TEST_CASE("A dynamic size never changes the key, a static one does",
          "[runtime][key]") {
  auto dynamic = prepare(baseSignature());
  const void *pointers[] = {buffer, buffer + 16, buffer + 32};
  KernelKey small = makeKernelKey(dynamic, 1, 32, pointers);
  KernelKey large = makeKernelKey(dynamic, 4096, 7168, pointers);
  CHECK(small == large);
  CHECK(small.hash() == large.hash());
  CHECK(small.rows() == kDynamicSize);

  KernelSignature staticSignature = baseSignature();
  staticSignature.colsPolicy = SizePolicy::Static;
  auto specialized = prepare(staticSignature);
  KernelKey cols32 = makeKernelKey(specialized, 1, 32, pointers);
  KernelKey cols64 = makeKernelKey(specialized, 9999, 64, pointers);
  CHECK_FALSE(cols32 == cols64);
  CHECK(cols32.cols() == 32);
  CHECK(cols32.serialize().find("cols.value=32\n") != std::string::npos);
  // Rows stay dynamic in that signature.
  CHECK(makeKernelKey(specialized, 1, 32, pointers) ==
        makeKernelKey(specialized, 77, 32, pointers));
}

TEST_CASE("Divisible16 keys on the divisibility class only", "[runtime][key]") {
  KernelSignature signature = baseSignature();
  signature.colsPolicy = SizePolicy::Divisible16;
  auto prepared = prepare(signature);
  const void *pointers[] = {buffer, buffer, buffer};
  CHECK(makeKernelKey(prepared, 1, 32, pointers) ==
        makeKernelKey(prepared, 1, 4096, pointers));
  CHECK_FALSE(makeKernelKey(prepared, 1, 32, pointers) ==
              makeKernelKey(prepared, 1, 33, pointers));
  CHECK(makeKernelKey(prepared, 1, 33, pointers)
            .serialize()
            .find("cols.value=not-multiple-of-16") != std::string::npos);
}

TEST_CASE("Pointers key on their 16-byte alignment class only",
          "[runtime][key]") {
  auto prepared = prepare(baseSignature());
  KernelKey aligned =
      makeKernelKey(prepared, 8, 64, {buffer, buffer + 16, buffer + 64});
  KernelKey alignedElsewhere =
      makeKernelKey(prepared, 8, 64, {buffer + 32, buffer + 48, buffer});
  KernelKey oneOff =
      makeKernelKey(prepared, 8, 64, {buffer, buffer + 18, buffer + 64});
  CHECK(aligned == alignedElsewhere);
  CHECK(aligned.alignedPointerMask() == 0b111);
  CHECK_FALSE(aligned == oneOff);
  CHECK(oneOff.alignedPointerMask() == 0b101);
  CHECK(oneOff.serialize().find("aligned16=101\n") != std::string::npos);
  // Pointers past pointerCount are not part of the key.
  CHECK(makeKernelKey(prepared, 8, 64,
                      {buffer, buffer + 16, buffer + 64, buffer + 1}) ==
        aligned);
}

TEST_CASE("Keys from separately prepared equal signatures are equal",
          "[runtime][key]") {
  KernelKey first =
      makeKernelKey(prepare(baseSignature()), 1, 1, {buffer, buffer, buffer});
  KernelKey second =
      makeKernelKey(prepare(baseSignature()), 1, 1, {buffer, buffer, buffer});
  CHECK(first == second);
  CHECK(first.serialize() == second.serialize());
  CHECK(KernelKeyHasher{}(first) == KernelKeyHasher{}(second));
}

TEST_CASE("Invalid signatures are errors, not keys", "[runtime][key]") {
  KernelSignature noSpec = baseSignature();
  noSpec.spec.clear();
  CHECK(prepareSignature(noSpec).error().code == ErrorCode::InvalidArgument);
  KernelSignature noChip = baseSignature();
  noChip.chip.clear();
  CHECK_FALSE(prepareSignature(noChip).ok());
  KernelSignature lineBreak = baseSignature();
  lineBreak.spec = "quantize int8\nchip=sm_80";
  auto broken = prepareSignature(lineBreak);
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message.find("line break") != std::string::npos);
  KernelSignature tooManyPointers = baseSignature();
  tooManyPointers.pointerCount = 33;
  CHECK_FALSE(prepareSignature(tooManyPointers).ok());
}
