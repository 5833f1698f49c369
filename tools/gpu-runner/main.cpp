//===- main.cpp - lowbit-gpu-runner: run an AOT bundle on a GPU -----------===//
//
// Loads a bundle written by `lowbit aot` with the MLIR-free runtime only
// (runtime/driver, runtime/aot, runtime/core), so it builds on the GPU test
// machine with plain g++/nvcc and cmake. For each entry it launches the
// kernels in manifest order with the recorded launch expressions and
// memref-descriptor packing, compares every written buffer bit for bit
// with the expected outputs computed by the CPU JIT, and times the
// kernels on the bundle's bench size (>= 256 MiB) next to a device-to-
// device copy of the same bytes, the bandwidth ceiling.
//
// Each entry with data is also checked against NVIDIA's own conversions:
// runtime/nvrtc's CUDA C++ reference kernel of the scheme (cuda_fp8.h,
// cuda_fp6.h, cuda_fp4.h), compiled by NVRTC at run time and run on the
// same input, must write the same bytes. Without NVRTC that check is
// skipped with the reason.
//
//   lowbit-gpu-runner BUNDLE [--out results.json] [--iterations N]
//                     [--no-bench] [--only NAME]
//
// Exit codes: 0 all correct, 1 a mismatch or a failed entry, 2 usage,
// 3 no driver or no device (the message says which).
//
//===----------------------------------------------------------------------===//

#include "runtime/aot/Bundle.h"
#include "runtime/aot/WorkspacePool.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/core/Npy.h"
#include "runtime/driver/CudaDriver.h"
#include "runtime/driver/Nvrtc.h"
#include "runtime/nvrtc/ReferenceKernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace lowbit;
using namespace lowbit::runtime;
using aot::JsonValue;
using aot::Shape;

namespace {

struct Options {
  std::string bundle, out;
  int iterations = 25;
  bool bench = true;
  bool checkOnly = false;
  std::string only;
  /// --check: the device chip to choose images for (default: the target).
  std::string chip;
};

/// Driver entry points the runtime's CudaDriverApi does not bind (the copy
/// ceiling); bound from the same libcuda handle.
struct ExtraApi {
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t,
                                CUstream) = nullptr;
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule,
                                const char *) = nullptr;
};

ExtraApi bindExtra(const CudaDriverApi &api) {
  ExtraApi extra;
  void *handle = dlopen(api.libraryPath.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    handle = dlopen(api.libraryPath.c_str(), RTLD_NOW);
  if (!handle)
    return extra;
  extra.cuMemcpyDtoDAsync = reinterpret_cast<decltype(extra.cuMemcpyDtoDAsync)>(
      dlsym(handle, "cuMemcpyDtoDAsync_v2"));
  return extra;
}

std::string check(const CudaDriverApi &api, CUresult result, const char *call) {
  if (result == kCudaSuccess)
    return {};
  return describeCudaError(api, result, call);
}

size_t bytesOf(const aot::ParamInfo &param, const Shape &shape) {
  return size_t(shape[0] * shape[1]) * aot::elementBytes(param.element);
}

/// A loaded module with one function per launch: one module per entry, so
/// the kernels share the module's device globals (the reduction results).
struct LoadedEntry {
  const CudaDriverApi *api = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  ~LoadedEntry() {
    if (module)
      api->cuModuleUnload(module);
  }
};

/// The images to try for an entry on `chip`, in order: the cubin when the
/// device is the bundle target's family (sm_90a's runs on sm_90), then the
/// PTX, which the driver JIT-compiles for the device it is on. A cubin that
/// does not load (another chip, a driver too old for its ELF) falls back to
/// the PTX.
std::vector<std::string> imageCandidates(const aot::BundleEntry &entry,
                                         const std::string &target,
                                         const std::string &chip) {
  std::vector<std::string> files;
  if (!entry.cubinFile.empty() && target.rfind(chip, 0) == 0)
    files.push_back(entry.cubinFile);
  files.push_back(entry.ptxFile);
  return files;
}

/// Tries the candidates in order with `loadImage` (cuModuleLoadData on a
/// GPU, a format check in --check mode). Returns the error of the last one
/// if none loads; `imageKind` is "cubin", "ptx", or "ptx (cubin failed:
/// ...)".
template <typename LoadImage>
std::string loadFirst(const std::string &bundle,
                      const std::vector<std::string> &candidates,
                      LoadImage loadImage, std::string &imageKind) {
  std::string failures;
  for (const std::string &file : candidates) {
    bool isCubin = file.size() > 6 && file.ends_with(".cubin");
    std::string image, error;
    if (!readFile(bundle + "/" + file, image, &error))
      error = file + ": " + error;
    else
      error = loadImage(image);
    if (error.empty()) {
      imageKind = isCubin ? "cubin" : "ptx";
      if (!failures.empty())
        imageKind += " (" + failures + ")";
      return {};
    }
    failures += (failures.empty() ? "" : "; ") +
                std::string(isCubin ? "cubin failed: " : "ptx failed: ") +
                error;
  }
  return failures;
}

/// --check's stand-in for cuModuleLoadData: a cubin must be an ELF image,
/// PTX text must name its .version and .target.
std::string checkImage(const std::string &image) {
  if (image.rfind("\x7f"
                  "ELF",
                  0) == 0)
    return {};
  if (image.find(".version") != std::string::npos &&
      image.find(".target") != std::string::npos)
    return {};
  return "neither an ELF cubin nor PTX text";
}

std::string load(const CudaContext &context, const std::string &bundle,
                 const aot::BundleEntry &entry, const std::string &target,
                 LoadedEntry &loaded, std::string &imageKind) {
  const CudaDriverApi &api = context.api();
  loaded.api = &api;
  auto loadImage = [&](const std::string &image) -> std::string {
    return check(api, api.cuModuleLoadData(&loaded.module, image.c_str()),
                 "cuModuleLoadData");
  };
  if (std::string e =
          loadFirst(bundle, imageCandidates(entry, target, context.chip()),
                    loadImage, imageKind);
      !e.empty())
    return e;
  for (const aot::Launch &launch : entry.launches) {
    CUfunction function = nullptr;
    if (std::string e = check(api,
                              api.cuModuleGetFunction(&function, loaded.module,
                                                      launch.entry.c_str()),
                              "cuModuleGetFunction");
        !e.empty())
      return e + " (" + launch.entry + ")";
    loaded.functions.push_back(function);
  }
  return {};
}

struct Buffers {
  std::vector<DeviceBuffer> device;
  std::vector<uint64_t> addresses;
  /// The size the buffers have (rank-2 shapes, ranked dims for KV).
  aot::SizeInstance size;
  /// The default stream's workspace, when the entry's kernels take one.
  uint64_t workspace = 0;
  int64_t workspaceWords = 0;
};

/// The runner launches on the default stream only, so the pool holds one
/// workspace (the largest any entry needs). Set by main after the context,
/// so it is freed before it.
launch::WorkspacePool *workspaces = nullptr;

std::string allocate(const CudaContext &context, const aot::BundleEntry &entry,
                     const aot::SizeInstance &size, Buffers &buffers) {
  buffers.size = size;
  const std::vector<Shape> &shapes = size.shapes;
  buffers.workspaceWords = entry.workspaceWords;
  if (entry.workspaceWords > 0) {
    Expected<uint64_t> workspace =
        workspaces->acquire(context.api(), nullptr, entry.workspaceWords);
    if (!workspace)
      return workspace.error().message;
    buffers.workspace = *workspace;
  }
  for (size_t i = 0; i < entry.params.size(); ++i) {
    // At least one byte, so that every parameter has a distinct address.
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(
        context, std::max<size_t>(1, bytesOf(entry.params[i], shapes[i])));
    if (!buffer)
      return buffer.error().message;
    buffers.addresses.push_back(buffer->address());
    buffers.device.push_back(std::move(*buffer));
  }
  return {};
}

/// Launches every kernel of the entry in manifest order on the default
/// stream.
/// An entry's launches resolved for the buffers' size, once: each step's
/// parameter array points into its own slots, so each has a fixed address.
using ResolvedLaunches = std::vector<std::unique_ptr<launch::ResolvedStep>>;

std::string resolveAll(const aot::BundleEntry &entry, const Buffers &buffers,
                       ResolvedLaunches &resolved) {
  resolved.clear();
  for (const aot::Launch &launch : entry.launches) {
    auto step = std::make_unique<launch::ResolvedStep>();
    if (Status status = aot::resolveLaunchFor(
            launch, buffers.size, buffers.addresses, buffers.workspace,
            buffers.workspaceWords, *step);
        !status)
      return status.error().message;
    resolved.push_back(std::move(step));
  }
  return {};
}

/// Launches resolved steps in order, without host work between them
/// beyond cuLaunchKernel (the timed sequence); with `perLaunchMillis`, each
/// timed alone.
std::string launchResolved(const CudaDriverApi &api,
                           const aot::BundleEntry &entry,
                           const LoadedEntry &loaded,
                           const ResolvedLaunches &resolved,
                           std::vector<float> *perLaunchMillis = nullptr) {
  for (size_t k = 0; k < resolved.size(); ++k) {
    launch::ResolvedStep &step = *resolved[k];
    if (step.empty())
      continue;
    const std::array<int64_t, 7> &sizes = step.sizes;
    auto work = [&]() -> Status {
      CUresult result = api.cuLaunchKernel(
          loaded.functions[k], unsigned(sizes[0]), unsigned(sizes[1]),
          unsigned(sizes[2]), unsigned(sizes[3]), unsigned(sizes[4]),
          unsigned(sizes[5]), unsigned(sizes[6]), nullptr, step.pointers.data(),
          nullptr);
      if (result != kCudaSuccess)
        return makeError(ErrorCode::CudaError,
                         describeCudaError(api, result, "cuLaunchKernel") +
                             " (" + entry.launches[k].entry + ")");
      return Status::success();
    };
    if (perLaunchMillis) {
      Expected<float> millis = timeOnStream(api, nullptr, work);
      if (!millis)
        return millis.error().message;
      perLaunchMillis->push_back(*millis);
    } else if (Status status = work(); !status) {
      return status.error().message;
    }
  }
  return {};
}

std::string launchAll(const CudaDriverApi &api, const aot::BundleEntry &entry,
                      const LoadedEntry &loaded, const Buffers &buffers) {
  ResolvedLaunches resolved;
  if (std::string e = resolveAll(entry, buffers, resolved); !e.empty())
    return e;
  return launchResolved(api, entry, loaded, resolved);
}

/// A data file, checked to hold parameter `param`'s bytes and, with
/// ranked dims, its shape.
std::optional<npy::Array> readSized(const std::string &bundle,
                                    const std::string &file,
                                    const aot::ParamInfo &info,
                                    const aot::SizeInstance &size, size_t param,
                                    std::string &error) {
  std::optional<npy::Array> array =
      npy::readNpy(bundle + "/" + file, &error, npy::kMaxNpyRank);
  if (!array)
    return std::nullopt;
  if (array->bytes.size() != bytesOf(info, size.shapes[param])) {
    error = file + ": size does not match the manifest";
    return std::nullopt;
  }
  if (param < size.dims.size() && array->shape != size.dims[param]) {
    error =
        file + ": shape " + array->shapeText() + " is not the manifest's dims";
    return std::nullopt;
  }
  return array;
}

std::vector<float> floatsOf(const std::vector<uint8_t> &bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

/// An f32 output within `data.relativeTolerance` of the expected one, per
/// element: |got - want| <= tolerance * |want| (NaN never is).
struct ToleranceResult {
  int64_t mismatches = 0;
  double maxRelative = 0;
};
ToleranceResult compareWithin(const std::vector<uint8_t> &gotBytes,
                              const std::vector<uint8_t> &wantBytes,
                              const aot::BundleData &data) {
  std::vector<float> got = floatsOf(gotBytes), want = floatsOf(wantBytes);
  ToleranceResult result;
  for (size_t e = 0; e < got.size(); ++e) {
    double difference = std::fabs(double(got[e]) - double(want[e]));
    double relative = difference / std::max(std::fabs(double(want[e])), 1e-30);
    if (!(relative <= data.relativeTolerance))
      ++result.mismatches;
    if (!(relative <= result.maxRelative))
      result.maxRelative = std::isnan(relative) ? INFINITY : relative;
  }
  return result;
}

/// The float64 reference of a written f32 parameter: raw little-endian
/// doubles, `count` of them.
std::optional<std::vector<double>> readFloat64(const std::string &bundle,
                                               const std::string &file,
                                               size_t count,
                                               std::string &error) {
  std::string bytes;
  if (!readFile(bundle + "/" + file, bytes, &error)) {
    error = file + ": " + error;
    return std::nullopt;
  }
  if (bytes.size() != count * 8) {
    error = file + ": " + std::to_string(bytes.size()) + " bytes, not " +
            std::to_string(count) + " doubles";
    return std::nullopt;
  }
  std::vector<double> values(count);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// The error of an f32 output against float64: the largest per element
/// (relative to |exact|) and the 2-norm one (||got - exact|| / ||exact||).
struct Float64Error {
  double maxRelative = 0, normRelative = 0;
};
Float64Error float64Error(const std::vector<uint8_t> &gotBytes,
                          const std::vector<double> &exact) {
  std::vector<float> got = floatsOf(gotBytes);
  Float64Error result;
  double difference = 0, norm = 0;
  for (size_t e = 0; e < got.size() && e < exact.size(); ++e) {
    double d = double(got[e]) - exact[e];
    difference += d * d;
    norm += exact[e] * exact[e];
    double relative = std::fabs(d) / std::max(std::fabs(exact[e]), 1e-30);
    if (!(relative <= result.maxRelative))
      result.maxRelative = std::isnan(relative) ? INFINITY : relative;
  }
  result.normRelative = norm > 0 ? std::sqrt(difference / norm) : 0;
  return result;
}

JsonValue correctness(const CudaContext &context, const Options &options,
                      const aot::BundleEntry &entry, const LoadedEntry &loaded,
                      bool &allCorrect) {
  JsonValue result = JsonValue::object();
  const CudaDriverApi &api = context.api();
  auto failWith = [&](const std::string &message) {
    result.set("correct", JsonValue::boolean(false));
    result.set("error", JsonValue::string(message));
    allCorrect = false;
    return result;
  };
  const aot::BundleData &data = *entry.data;
  Buffers buffers;
  if (std::string e = allocate(context, entry, data.size, buffers); !e.empty())
    return failWith(e);
  std::vector<std::vector<uint8_t>> expected(entry.params.size());
  for (size_t i = 0; i < entry.params.size(); ++i) {
    std::string error;
    size_t bytes = bytesOf(entry.params[i], data.size.shapes[i]);
    // A written scratch parameter has no file: garbage in, not compared.
    std::vector<uint8_t> upload(bytes, 0xA5);
    if (!data.files[i].empty()) {
      std::optional<npy::Array> array = readSized(
          options.bundle, data.files[i], entry.params[i], data.size, i, error);
      if (!array)
        return failWith(error);
      if (entry.params[i].written)
        expected[i] = std::move(array->bytes);
      else
        upload = std::move(array->bytes);
    }
    // Garbage first, so every byte of a written parameter must be
    // written; or the state it is updated from (a cache before an append).
    if (entry.params[i].written && i < data.size.inputs.size() &&
        !data.size.inputs[i].empty()) {
      std::optional<npy::Array> before =
          readSized(options.bundle, data.size.inputs[i], entry.params[i],
                    data.size, i, error);
      if (!before)
        return failWith(error);
      upload = std::move(before->bytes);
    }
    if (Status s = buffers.device[i].upload(upload.data(), bytes); !s)
      return failWith(s.error().message);
  }
  if (std::string e = launchAll(api, entry, loaded, buffers); !e.empty())
    return failWith(e);
  if (std::string e = check(api, api.cuCtxSynchronize(), "cuCtxSynchronize");
      !e.empty())
    return failWith(e);
  int64_t mismatches = 0, compared = 0;
  JsonValue firstMismatches = JsonValue::array();
  for (size_t i = 0; i < entry.params.size(); ++i) {
    if (!entry.params[i].written || data.files[i].empty())
      continue;
    std::vector<uint8_t> got(expected[i].size());
    if (Status s = buffers.device[i].download(got.data(), got.size()); !s)
      return failWith(s.error().message);
    compared += int64_t(got.size());
    if (data.relativeTolerance > 0) {
      // f32 within the tolerance (attention: the GPU's summation order
      // may differ from the CPU tail's), and the error against float64.
      ToleranceResult within = compareWithin(got, expected[i], data);
      // Bytes of the f32 elements outside the tolerance.
      mismatches += 4 * within.mismatches;
      result.set("max_relative_error_vs_cpu",
                 JsonValue::number(within.maxRelative));
      if (data.float64Param == int(i)) {
        std::string error;
        std::optional<std::vector<double>> exact = readFloat64(
            options.bundle, data.float64File, got.size() / 4, error);
        if (!exact)
          return failWith(error);
        Float64Error vs = float64Error(got, *exact);
        result.set("max_relative_error_vs_float64",
                   JsonValue::number(vs.maxRelative));
        result.set("relative_error_vs_float64",
                   JsonValue::number(vs.normRelative));
      }
      continue;
    }
    for (size_t b = 0; b < got.size(); ++b) {
      if (got[b] == expected[i][b])
        continue;
      if (mismatches++ < 8) {
        JsonValue m = JsonValue::object();
        m.set("param", JsonValue::number(int64_t(i)));
        m.set("role", JsonValue::string(entry.params[i].role));
        m.set("byte", JsonValue::number(int64_t(b)));
        m.set("got", JsonValue::number(int64_t(got[b])));
        m.set("expected", JsonValue::number(int64_t(expected[i][b])));
        firstMismatches.push(std::move(m));
      }
    }
  }
  result.set("correct", JsonValue::boolean(mismatches == 0));
  result.set("rows", JsonValue::number(data.size.rows));
  result.set("cols", JsonValue::number(data.size.cols));
  result.set("bytes_compared", JsonValue::number(compared));
  result.set("mismatched_bytes", JsonValue::number(mismatches));
  result.set("first_mismatches", std::move(firstMismatches));
  if (mismatches)
    allCorrect = false;
  return result;
}

/// NVIDIA's conversions on the entry's data: the scheme's NVRTC reference
/// kernel (ReferenceKernels.h ABI) on the same inputs must write the
/// expected bytes. Covers dynamic-scale f32 entries of named schemes.
JsonValue nvidiaReference(const CudaContext &context,
                          const aot::BundleEntry &entry,
                          const std::string &bundle, const std::string &target,
                          bool &allCorrect) {
  JsonValue result = JsonValue::object();
  auto skip = [&](const std::string &why) {
    result.set("skipped", JsonValue::string(why));
    return result;
  };
  auto failWith = [&](const std::string &message) {
    result.set("correct", JsonValue::boolean(false));
    result.set("error", JsonValue::string(message));
    allCorrect = false;
    return result;
  };
  if (entry.kind != "scheme")
    return skip("NVIDIA's conversions cover the scheme kernels");
  if (entry.valueType != "f32" ||
      entry.spec.find("scale=static") != std::string::npos ||
      entry.name.ends_with("-given"))
    return skip("the reference kernels cover dynamic f32 specs");
  Expected<ReferenceKernelSource> source =
      referenceKernelSource(entry.scheme, "f32");
  if (!source)
    return skip(source.error().message);
  Expected<const NvrtcApi *> nvrtc = nvrtcLibrary();
  if (!nvrtc)
    return skip("NVRTC: " + nvrtc.error().message);
  Expected<ReferenceKernelBuild> build =
      buildReferenceKernel(**nvrtc, nullptr, *source, target);
  if (!build)
    return failWith("NVRTC: " + build.error().message);

  const aot::BundleData &data = *entry.data;
  std::map<std::string, size_t> roleIndex;
  for (size_t i = 0; i < entry.params.size(); ++i)
    roleIndex[entry.params[i].role] = i;
  std::vector<DeviceBuffer> device;
  std::vector<CUdeviceptr> address(entry.params.size(), 0);
  std::vector<std::vector<uint8_t>> expected(entry.params.size());
  for (size_t i = 0; i < entry.params.size(); ++i) {
    std::string error;
    std::optional<npy::Array> array =
        npy::readNpy(bundle + "/" + data.files[i], &error);
    if (!array)
      return failWith(error);
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(
        context, std::max<size_t>(1, array->bytes.size()));
    if (!buffer)
      return failWith(buffer.error().message);
    std::vector<uint8_t> upload = array->bytes;
    if (entry.params[i].written) {
      expected[i] = std::move(array->bytes);
      std::fill(upload.begin(), upload.end(), uint8_t(0xA5));
    }
    if (Status s = buffer->upload(upload.data(), upload.size()); !s)
      return failWith(s.error().message);
    address[i] = buffer->address();
    device.push_back(std::move(*buffer));
  }
  auto pointer = [&](const char *role) -> CUdeviceptr {
    auto it = roleIndex.find(role);
    return it == roleIndex.end() ? 0 : address[it->second];
  };
  Expected<DeviceBuffer> scratch = DeviceBuffer::allocate(context, 4);
  uint32_t zero = 0;
  if (!scratch)
    return failWith(scratch.error().message);
  if (Status s = scratch->upload(&zero, 4); !s)
    return failWith(s.error().message);
  long long rows = data.size.rows, cols = data.size.cols;
  long long count = rows * cols;
  CUdeviceptr x = pointer("input"), codes = pointer("codes"),
              scales = pointer("scales"), zeros = pointer("zeros"),
              global = pointer("global"), out = pointer("output"),
              amax = scratch->address();
  auto run = [&](const char *name, unsigned blocks, unsigned threads,
                 void **arguments) -> std::string {
    Expected<CudaModule> kernel = CudaModule::load(context, build->ptx, name);
    if (!kernel)
      return kernel.error().message;
    if (Status s = kernel->launch({blocks}, {threads}, 0, nullptr, arguments);
        !s)
      return s.error().message;
    return check(context.api(), context.api().cuCtxSynchronize(),
                 "cuCtxSynchronize");
  };
  std::string error;
  if (entry.op == "quantize") {
    if (source->needsTensorAmax) {
      void *arguments[] = {&x, &count, &amax};
      error = run("lowbit_ref_amax",
                  unsigned(std::min<long long>((count + 255) / 256, 1024)), 256,
                  arguments);
    }
    long long threads = quantizeThreads(*source, rows, cols);
    void *arguments[] = {&x,     &rows,   &cols,  &amax,
                         &codes, &scales, &zeros, &global};
    if (error.empty())
      error = run("lowbit_ref_quantize", unsigned((threads + 127) / 128), 128,
                  arguments);
  } else {
    void *arguments[] = {&codes, &rows, &cols, &scales, &zeros, &global, &out};
    error = run("lowbit_ref_dequantize", unsigned((count + 127) / 128), 128,
                arguments);
  }
  if (!error.empty())
    return failWith(error);
  int64_t mismatches = 0;
  for (size_t i = 0; i < entry.params.size(); ++i) {
    if (!entry.params[i].written)
      continue;
    std::vector<uint8_t> got(expected[i].size());
    if (Status s = device[i].download(got.data(), got.size()); !s)
      return failWith(s.error().message);
    for (size_t b = 0; b < got.size(); ++b)
      mismatches += got[b] != expected[i][b];
  }
  result.set("correct", JsonValue::boolean(mismatches == 0));
  result.set("mismatched_bytes", JsonValue::number(mismatches));
  if (mismatches)
    allCorrect = false;
  return result;
}

float median(std::vector<float> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// Bench inputs: finite f32/f16/bf16 values of mixed magnitude, random
/// code bytes, and scales of 1.0 (f32/f16/bf16) or random bytes (e8m0,
/// ue4m3 codes), so no kernel takes a NaN shortcut.
std::vector<uint8_t> benchInput(const aot::ParamInfo &param, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&]() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  bool isFloat = param.element != "i8";
  if (!isFloat) {
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
      uint64_t r = next();
      std::memcpy(&data[i], &r, 8);
    }
    return data;
  }
  bool ones = param.role != "input";
  if (param.element == "f32") {
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      float v =
          ones ? 1.0f : float(int64_t(next() % 2000001) - 1000000) * 1e-4f;
      std::memcpy(&data[i], &v, 4);
    }
  } else {
    // 1.0 is 0x3C00 (f16) / 0x3F80 (bf16); inputs: exponent near 1.
    uint16_t one = param.element == "f16" ? 0x3C00 : 0x3F80;
    for (size_t i = 0; i + 2 <= bytes; i += 2) {
      uint16_t v = ones ? one : uint16_t(one ^ (next() & 0x83FF));
      std::memcpy(&data[i], &v, 2);
    }
  }
  return data;
}

JsonValue bench(const CudaContext &context, const Options &options,
                const ExtraApi &extra, const aot::BundleEntry &entry,
                const LoadedEntry &loaded) {
  JsonValue result = JsonValue::object();
  const CudaDriverApi &api = context.api();
  auto failWith = [&](const std::string &message) {
    result.set("error", JsonValue::string(message));
    return result;
  };
  const aot::SizeInstance &size = *entry.bench;
  Buffers buffers;
  if (std::string e = allocate(context, entry, size, buffers); !e.empty())
    return failWith(e);
  size_t totalBytes = 0;
  for (size_t i = 0; i < entry.params.size(); ++i) {
    size_t bytes = bytesOf(entry.params[i], size.shapes[i]);
    totalBytes += bytes;
    // The index buffers (positions, lengths, block tables) come with the
    // bundle: generated ones would point outside the cache.
    if (i < size.inputs.size() && !size.inputs[i].empty()) {
      std::string error;
      std::optional<npy::Array> array = readSized(
          options.bundle, size.inputs[i], entry.params[i], size, i, error);
      if (!array)
        return failWith(error);
      if (Status s = buffers.device[i].upload(array->bytes.data(), bytes); !s)
        return failWith(s.error().message);
      continue;
    }
    if (entry.params[i].written)
      continue;
    std::vector<uint8_t> input = benchInput(entry.params[i], bytes);
    if (Status s = buffers.device[i].upload(input.data(), bytes); !s)
      return failWith(s.error().message);
  }
  // Resolved once: the timed sequences hold only the launches.
  ResolvedLaunches resolved;
  if (std::string e = resolveAll(entry, buffers, resolved); !e.empty())
    return failWith(e);
  for (int warm = 0; warm < 3; ++warm)
    if (std::string e = launchResolved(api, entry, loaded, resolved);
        !e.empty())
      return failWith(e);
  std::vector<float> whole;
  std::vector<std::vector<float>> perLaunch(entry.launches.size());
  for (int run = 0; run < options.iterations; ++run) {
    Expected<float> millis = timeOnStream(api, nullptr, [&]() -> Status {
      std::string e = launchResolved(api, entry, loaded, resolved);
      if (!e.empty())
        return makeError(ErrorCode::CudaError, e);
      return Status::success();
    });
    if (!millis)
      return failWith(millis.error().message);
    whole.push_back(*millis);
  }
  // Per-kernel medians, timed one launch at a time (less accurate for
  // tiny kernels; the whole-sequence median is the headline number).
  for (int run = 0; run < options.iterations; ++run) {
    std::vector<float> one;
    if (std::string e = launchResolved(api, entry, loaded, resolved, &one);
        !e.empty())
      return failWith(e);
    for (size_t k = 0; k < one.size() && k < perLaunch.size(); ++k)
      perLaunch[k].push_back(one[k]);
  }
  float kernelMillis = median(whole);
  result.set("rows", JsonValue::number(size.rows));
  result.set("cols", JsonValue::number(size.cols));
  result.set("bytes", JsonValue::number(int64_t(totalBytes)));
  result.set("iterations", JsonValue::number(int64_t(options.iterations)));
  result.set("median_ms", JsonValue::number(double(kernelMillis)));
  result.set("gbps", JsonValue::number(kernelMillis > 0
                                           ? totalBytes / (kernelMillis * 1e6)
                                           : 0.0));
  JsonValue launches = JsonValue::array();
  for (size_t k = 0; k < perLaunch.size(); ++k) {
    JsonValue l = JsonValue::object();
    l.set("entry", JsonValue::string(entry.launches[k].entry));
    l.set("median_ms", JsonValue::number(double(median(perLaunch[k]))));
    launches.push(std::move(l));
  }
  result.set("launches", std::move(launches));

  // The ceiling: a copy that reads and writes totalBytes in all.
  if (extra.cuMemcpyDtoDAsync) {
    size_t half = totalBytes / 2;
    Expected<DeviceBuffer> from = DeviceBuffer::allocate(context, half);
    Expected<DeviceBuffer> to = DeviceBuffer::allocate(context, half);
    if (!from || !to)
      return failWith("copy ceiling: allocation failed");
    auto copy = [&]() -> Status {
      CUresult r = extra.cuMemcpyDtoDAsync(to->address(), from->address(), half,
                                           nullptr);
      if (r != kCudaSuccess)
        return makeError(ErrorCode::CudaError,
                         describeCudaError(api, r, "cuMemcpyDtoDAsync"));
      return Status::success();
    };
    std::vector<float> copies;
    for (int run = 0; run < options.iterations + 3; ++run) {
      Expected<float> millis = timeOnStream(api, nullptr, copy);
      if (!millis)
        return failWith(millis.error().message);
      if (run >= 3)
        copies.push_back(*millis);
    }
    float copyMillis = median(copies);
    result.set("copy_median_ms", JsonValue::number(double(copyMillis)));
    double copyGbps = copyMillis > 0 ? 2.0 * half / (copyMillis * 1e6) : 0.0;
    result.set("copy_gbps", JsonValue::number(copyGbps));
    if (copyGbps > 0 && kernelMillis > 0)
      result.set(
          "fraction_of_copy",
          JsonValue::number(totalBytes / (kernelMillis * 1e6) / copyGbps));
  }
  return result;
}

/// --check's recomputations where they are cheap: an attention output is
/// within 1e-3 (2-norm) of its float64 reference; a contiguous KV append's
/// expected cache equals the cache before it outside the rows its
/// positions reach ([positions[b], positions[b] + tokens)), and every
/// position fits the cache; a paged one's block table names pages that
/// exist. "" or what is wrong.
std::string recheckData(const std::string &bundle,
                        const aot::BundleEntry &entry) {
  const aot::BundleData &data = *entry.data;
  std::string error;
  auto load = [&](size_t param, const std::string &file) {
    return readSized(bundle, file, entry.params[param], data.size, param,
                     error);
  };
  if (data.float64Param >= 0) {
    size_t param = size_t(data.float64Param);
    std::optional<npy::Array> output = load(param, data.files[param]);
    std::optional<std::vector<double>> exact =
        output ? readFloat64(bundle, data.float64File, output->bytes.size() / 4,
                             error)
               : std::nullopt;
    if (!exact)
      return error;
    Float64Error vs = float64Error(output->bytes, *exact);
    if (!(vs.normRelative <= 1e-3))
      return data.files[param] + ": " + std::to_string(vs.normRelative) +
             " from the float64 reference (more than 1e-3)";
  }
  if (entry.kind != "kv" || data.size.dims.empty())
    return {};
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < entry.params.size(); ++i)
    index[entry.params[i].role] = i;
  // A KIVI append has lengths, not positions: nothing cheap to recheck.
  if (!index.count("codes") || !index.count("positions"))
    return {};
  const std::vector<int64_t> &codes = data.size.dims[index["codes"]];
  if (codes.size() != 4)
    return "the codes' dims are not [batch or pages, heads, tokens, dim]";
  std::optional<npy::Array> positions =
      load(index["positions"], data.files[index["positions"]]);
  if (!positions)
    return error;
  std::vector<int32_t> starts(positions->bytes.size() / 4);
  std::memcpy(starts.data(), positions->bytes.data(), starts.size() * 4);
  int64_t tokens = data.size.cols;
  if (index.count("block_table")) {
    std::optional<npy::Array> table =
        load(index["block_table"], data.files[index["block_table"]]);
    if (!table)
      return error;
    for (size_t e = 0; e < table->bytes.size() / 4; ++e) {
      int32_t page = 0;
      std::memcpy(&page, table->bytes.data() + 4 * e, 4);
      if (page < 0 || page >= codes[0])
        return "block_table entry " + std::to_string(page) +
               " names no page of " + std::to_string(codes[0]);
    }
    return {};
  }
  for (int32_t start : starts)
    if (start < 0 || start + tokens > codes[2])
      return "position " + std::to_string(start) + " + " +
             std::to_string(tokens) + " tokens is past the cache's " +
             std::to_string(codes[2]);
  if (entry.op != "kv_append")
    return {};
  for (size_t i = 0; i < entry.params.size(); ++i) {
    if (!entry.params[i].written || data.size.inputs[i].empty())
      continue;
    std::optional<npy::Array> before = load(i, data.size.inputs[i]);
    std::optional<npy::Array> after =
        before ? load(i, data.files[i]) : std::nullopt;
    if (!after)
      return error;
    const std::vector<int64_t> &dims = data.size.dims[i];
    if (dims.size() != 4 || size_t(dims[0]) != starts.size())
      return data.files[i] + ": dims are not [batch, heads, tokens, width]";
    size_t rowBytes =
        size_t(dims[3]) * aot::elementBytes(entry.params[i].element);
    for (int64_t row = 0; row < dims[0] * dims[1] * dims[2]; ++row) {
      int64_t t = row % dims[2], b = row / (dims[1] * dims[2]);
      bool appended = t >= starts[size_t(b)] && t < starts[size_t(b)] + tokens;
      if (!appended &&
          std::memcmp(before->bytes.data() + row * rowBytes,
                      after->bytes.data() + row * rowBytes, rowBytes) != 0)
        return data.files[i] + ": row " + std::to_string(row) +
               " is outside the append but differs from the cache before it";
    }
  }
  return {};
}

/// --check: everything short of the GPU. Every launch expression
/// evaluates on the data and bench shapes, the operands pack, and every
/// data file exists with the manifest's size. Runs without a driver.
int checkBundle(const Options &options, const aot::Manifest &manifest) {
  int failures = 0;
  for (const aot::BundleEntry &entry : manifest.entries) {
    std::string error;
    auto fail = [&](const std::string &message) {
      std::printf("%-28s FAIL %s\n", entry.name.c_str(), message.c_str());
      ++failures;
    };
    std::string imageKind;
    if (std::string e =
            loadFirst(options.bundle,
                      imageCandidates(entry, manifest.target,
                                      options.chip.empty() ? manifest.target
                                                           : options.chip),
                      checkImage, imageKind);
        !e.empty()) {
      fail(e);
      continue;
    }
    std::vector<const aot::SizeInstance *> sizes;
    if (entry.data)
      sizes.push_back(&entry.data->size);
    if (entry.bench)
      sizes.push_back(&*entry.bench);
    bool ok = true;
    std::string summary;
    auto resolved = std::make_unique<launch::ResolvedStep>();
    for (const aot::SizeInstance *size : sizes) {
      std::vector<uint64_t> addresses(entry.params.size(), 0x10000);
      for (const aot::Launch &launch : entry.launches) {
        if (Status status =
                aot::resolveLaunchFor(launch, *size, addresses, 0x20000,
                                      entry.workspaceWords, *resolved);
            !status) {
          fail(status.error().message);
          ok = false;
          break;
        }
        const std::array<int64_t, 7> &dims = resolved->sizes;
        summary +=
            " " + launch.entry + "<<<" + std::to_string(dims[0]) + "x" +
            std::to_string(dims[1]) + "x" + std::to_string(dims[2]) + "," +
            std::to_string(dims[3]) + "x" + std::to_string(dims[4]) + ">>>@" +
            std::to_string(size->rows) + "x" + std::to_string(size->cols);
      }
    }
    // Every file the runner would read, with its size and shape.
    for (const aot::SizeInstance *size : sizes)
      for (size_t i = 0; ok && i < entry.params.size(); ++i) {
        std::vector<std::string> files;
        if (size == sizes.front() && entry.data)
          files.push_back(entry.data->files[i]);
        if (i < size->inputs.size())
          files.push_back(size->inputs[i]);
        for (const std::string &file : files)
          if (!file.empty() && ok &&
              !readSized(options.bundle, file, entry.params[i], *size, i,
                         error)) {
            fail(error);
            ok = false;
          }
      }
    if (ok && entry.data) {
      std::string inconsistent = recheckData(options.bundle, entry);
      if (!inconsistent.empty()) {
        fail(inconsistent);
        ok = false;
      }
    }
    if (ok)
      std::printf("%-28s ok %s%s\n", entry.name.c_str(), imageKind.c_str(),
                  summary.c_str());
  }
  return failures ? 1 : 0;
}

/// Writes the results so far to --out (atomically); `complete` is false
/// until the last entry is in.
std::string writeResults(const Options &options, const JsonValue &header,
                         const JsonValue &entries, bool allCorrect,
                         bool complete) {
  if (options.out.empty())
    return {};
  JsonValue results = header;
  results.set("all_correct", JsonValue::boolean(allCorrect));
  results.set("complete", JsonValue::boolean(complete));
  results.set("entries", entries);
  std::string error;
  if (!writeFileAtomically(options.out, results.serialize(), &error))
    return error;
  return {};
}

int usage(const char *message) {
  std::fprintf(stderr,
               "lowbit-gpu-runner: %s\nusage: lowbit-gpu-runner BUNDLE "
               "[--out results.json] [--iterations N] [--no-bench] "
               "[--only NAME] [--check [--chip sm_NN]]\n",
               message);
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--out" || arg == "--iterations" || arg == "--only" ||
         arg == "--chip") &&
        i + 1 >= argc)
      return usage("option needs a value");
    if (arg == "--out")
      options.out = argv[++i];
    else if (arg == "--iterations")
      options.iterations = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--only")
      options.only = argv[++i];
    else if (arg == "--chip")
      options.chip = argv[++i];
    else if (arg == "--no-bench")
      options.bench = false;
    else if (arg == "--check")
      options.checkOnly = true;
    else if (arg.rfind("--", 0) == 0)
      return usage(("unknown option " + arg).c_str());
    else
      options.bundle = arg;
  }
  if (options.bundle.empty())
    return usage("no bundle directory given");

  std::string error;
  std::optional<aot::Manifest> manifest =
      aot::readManifest(options.bundle, &error);
  if (!manifest) {
    std::fprintf(stderr, "lowbit-gpu-runner: %s\n", error.c_str());
    return 1;
  }
  if (options.checkOnly)
    return checkBundle(options, *manifest);
  // The bundle is read first so that a broken bundle is reported even on
  // a machine without a GPU; then the driver.
  Expected<const CudaDriverApi *> driver = cudaDriver();
  if (!driver) {
    std::fprintf(stderr, "lowbit-gpu-runner: libcuda not found: %s\n",
                 driver.error().message.c_str());
    return 3;
  }
  Expected<CudaContext> context = CudaContext::open(**driver);
  if (!context) {
    const std::string &message = context.error().message;
    std::fprintf(stderr, "lowbit-gpu-runner: %s%s\n",
                 message.rfind("no CUDA device", 0) == 0 ? ""
                                                         : "no CUDA device: ",
                 message.c_str());
    return 3;
  }
  const CudaDriverApi &api = context->api();
  launch::WorkspacePool pool;
  workspaces = &pool;
  ExtraApi extra = bindExtra(api);
  int driverVersion = 0;
  api.cuDriverGetVersion(&driverVersion);

  JsonValue results = JsonValue::object();
  results.set("device", JsonValue::string(context->deviceName()));
  results.set("chip", JsonValue::string(context->chip()));
  results.set("driver_version", JsonValue::number(int64_t(driverVersion)));
  results.set("bundle_target", JsonValue::string(manifest->target));
  results.set("lowbit_version", JsonValue::string(manifest->lowbitVersion));
  JsonValue entries = JsonValue::array();
  bool allCorrect = true;
  for (const aot::BundleEntry &entry : manifest->entries) {
    if (!options.only.empty() && entry.name != options.only)
      continue;
    JsonValue out = JsonValue::object();
    out.set("name", JsonValue::string(entry.name));
    out.set("spec", JsonValue::string(entry.spec));
    out.set("op", JsonValue::string(entry.op));
    out.set("scheme", JsonValue::string(entry.scheme));
    LoadedEntry loaded;
    std::string imageKind;
    if (std::string e = load(*context, options.bundle, entry, manifest->target,
                             loaded, imageKind);
        !e.empty()) {
      out.set("error", JsonValue::string(e));
      allCorrect = false;
      entries.push(std::move(out));
      std::printf("%-28s LOAD FAILED: %s\n", entry.name.c_str(), e.c_str());
      continue;
    }
    out.set("image", JsonValue::string(imageKind));
    std::string line = entry.name;
    line.resize(std::max<size_t>(line.size(), 28), ' ');
    if (entry.data) {
      JsonValue c = correctness(*context, options, entry, loaded, allCorrect);
      const JsonValue *ok = c.get("correct");
      bool within = entry.data->relativeTolerance > 0;
      line += ok && ok->asBool()
                  ? (within ? " within 1e-5 of CPU" : " bit-exact")
                  : " MISMATCH";
      if (const JsonValue *error = c.get("max_relative_error_vs_float64"))
        line += " (max rel err vs float64 " + error->text().substr(0, 8) + ")";
      out.set("correctness", std::move(c));
      JsonValue reference = nvidiaReference(*context, entry, options.bundle,
                                            manifest->target, allCorrect);
      const JsonValue *same = reference.get("correct");
      line += !same            ? " (NVIDIA ref skipped)"
              : same->asBool() ? ", = NVIDIA ref"
                               : ", NVIDIA ref MISMATCH";
      out.set("nvidia_reference", std::move(reference));
    }
    if (options.bench && entry.bench) {
      JsonValue b = bench(*context, options, extra, entry, loaded);
      if (const JsonValue *gbps = b.get("gbps"))
        line += "  " + gbps->text().substr(0, 7) + " GB/s";
      if (const JsonValue *copy = b.get("copy_gbps"))
        line += " (copy " + copy->text().substr(0, 7) + ")";
      if (const JsonValue *fraction = b.get("fraction_of_copy"))
        line += " " +
                std::to_string(int(fraction->asDouble().value_or(0) * 100)) +
                "% of copy";
      if (const JsonValue *e = b.get("error"))
        line += "  bench error: " + e->text();
      out.set("bench", std::move(b));
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    entries.push(std::move(out));
    // Each entry's result is on disk as soon as it is known: a run cut
    // short (a timeout, a hung kernel) keeps everything before it.
    if (std::string e = writeResults(options, results, entries, allCorrect,
                                     /*complete=*/false);
        !e.empty()) {
      std::fprintf(stderr, "lowbit-gpu-runner: %s\n", e.c_str());
      return 1;
    }
  }
  if (std::string e = writeResults(options, results, entries, allCorrect,
                                   /*complete=*/true);
      !e.empty()) {
    std::fprintf(stderr, "lowbit-gpu-runner: %s\n", e.c_str());
    return 1;
  }
  return allCorrect ? 0 : 1;
}
