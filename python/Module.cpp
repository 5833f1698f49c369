//===- Module.cpp - lowbit._lowbit: the C API for Python (nanobind) -------===//
//
// A thin layer: every array arrives as a nanobind ndarray (numpy's buffer
// protocol or anything with __dlpack__), becomes a DLTensor and goes to
// lowbit.h. Each call returns (status, message) so that lowbit/__init__.py
// raises LowbitError with the code and lowbit's message; allocation of
// outputs (as numpy arrays or torch tensors, like the input) is Python's.
// The GIL is released while lowbit works (a JIT compile takes a while).
//
//===----------------------------------------------------------------------===//

#include "format/Scheme.h"
#include "lowbit/lowbit.h"
#include "runtime/spec/KernelSpec.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;

namespace {

using Array = nb::ndarray<nb::ro>;
using Result = std::tuple<int, std::string>;

DLTensor toDLTensor(const Array &array) {
  DLTensor tensor{};
  tensor.data = const_cast<void *>(array.data());
  tensor.device.device_type = DLDeviceType(array.device_type());
  tensor.device.device_id = array.device_id();
  tensor.ndim = int32_t(array.ndim());
  nb::dlpack::dtype dtype = array.dtype();
  tensor.dtype = DLDataType{dtype.code, dtype.bits, dtype.lanes};
  tensor.shape = const_cast<int64_t *>(array.shape_ptr());
  tensor.strides = const_cast<int64_t *>(array.stride_ptr());
  return tensor;
}

Result result(lowbit_status status) {
  return {int(status), status == LOWBIT_OK ? "" : lowbit_last_error()};
}

/// Optional arrays as DLTensors (NULL where absent).
struct OptionalTensor {
  explicit OptionalTensor(const std::optional<Array> &array)
      : present(array.has_value()) {
    if (present)
      tensor = toDLTensor(*array);
  }
  const DLTensor *get() const { return present ? &tensor : nullptr; }
  bool present;
  DLTensor tensor{};
};

struct Jit {
  lowbit_jit *handle = nullptr;
  ~Jit() { lowbit_jit_destroy(handle); }
};

struct Kernel {
  lowbit_kernel *handle = nullptr;
  ~Kernel() { lowbit_kernel_destroy(handle); }
};

struct KvKernel {
  lowbit_kv_kernel *handle = nullptr;
  ~KvKernel() { lowbit_kv_kernel_destroy(handle); }
};

std::vector<DLTensor> toDLTensors(const std::vector<Array> &arrays) {
  std::vector<DLTensor> tensors;
  for (const Array &array : arrays)
    tensors.push_back(toDLTensor(array));
  return tensors;
}

nb::dict dtypeDict(DLDataType dtype) {
  nb::dict dict;
  dict["code"] = int(dtype.code);
  dict["bits"] = int(dtype.bits);
  return dict;
}

} // namespace

NB_MODULE(_lowbit, m) {
  m.doc() = "lowbit's C API (lowbit.h) for Python; use the `lowbit` package";

  // What an argument is, before a call converts it: 0 not an array
  // (neither the buffer protocol nor __dlpack__ gives one), 1 a read-only
  // array, 2 a writable one. lowbit/__init__.py turns the first two into
  // LowbitError where they do not fit (a read-only output).
  m.def("probe", [](nb::handle object) {
    nb::ndarray<> writable;
    if (nb::try_cast(object, writable))
      return 2;
    nb::ndarray<nb::ro> readable;
    return nb::try_cast(object, readable) ? 1 : 0;
  });

  m.def("version", [] { return std::string(lowbit_version()); });
  m.def("status_name", [](int status) {
    return std::string(lowbit_status_name(lowbit_status(status)));
  });
  m.def("schemes", [] {
    std::vector<std::string> names;
    for (size_t i = 0; lowbit_scheme_name(i); ++i)
      names.emplace_back(lowbit_scheme_name(i));
    return names;
  });
  m.def("formats", [] {
    std::vector<std::string> names;
    for (size_t i = 0; lowbit_format_name(i); ++i)
      names.emplace_back(lowbit_format_name(i));
    return names;
  });

  // A scheme's element and scale format names and its packing, which
  // lowbit.torch maps to torch's low-bit dtypes (format/Scheme.h, the one
  // place the named schemes are defined).
  m.def("scheme_storage", [](const std::string &text) {
    std::string error;
    std::optional<lowbit::Scheme> scheme =
        lowbit::parseSchemeText(text, &error);
    nb::dict dict;
    if (!scheme)
      return std::make_tuple(Result{int(LOWBIT_ERROR_INVALID_ARGUMENT),
                                    "scheme '" + text + "': " + error},
                             dict);
    dict["element"] = scheme->element.name();
    dict["scale"] = std::string(lowbit::scaleTypeName(scheme->scale.type));
    dict["nibbles"] = scheme->packing == lowbit::Packing::Nibble;
    return std::make_tuple(Result{int(LOWBIT_OK), ""}, dict);
  });

  m.def("layout", [](const std::string &scheme, int64_t rows, int64_t cols) {
    lowbit_quantized_layout layout{};
    lowbit_status status =
        lowbit_quantized_layout_of(scheme.c_str(), rows, cols, &layout);
    nb::dict dict;
    if (status == LOWBIT_OK) {
      dict["codes_shape"] =
          nb::make_tuple(layout.codes_shape[0], layout.codes_shape[1]);
      dict["scales_shape"] =
          nb::make_tuple(layout.scales_shape[0], layout.scales_shape[1]);
      dict["scales_dtype"] = dtypeDict(layout.scales_dtype);
      dict["has_zeros"] = bool(layout.has_zeros);
      dict["has_global_scale"] = bool(layout.has_global_scale);
    }
    return std::make_tuple(result(status), dict);
  });

  m.def(
      "quantize",
      [](const std::string &scheme, const Array &input, const Array &codes,
         const Array &scales, const std::optional<Array> &zeros,
         const std::optional<Array> &global, unsigned flags) {
        DLTensor in = toDLTensor(input), c = toDLTensor(codes),
                 s = toDLTensor(scales);
        OptionalTensor z(zeros), g(global);
        nb::gil_scoped_release release;
        return result(lowbit_quantize(scheme.c_str(), &in, &c, &s, z.get(),
                                      g.get(), flags));
      },
      nb::arg("scheme"), nb::arg("input"), nb::arg("codes"), nb::arg("scales"),
      nb::arg("zeros").none(), nb::arg("global").none(), nb::arg("flags"));

  m.def(
      "dequantize",
      [](const std::string &scheme, const Array &codes, const Array &scales,
         const std::optional<Array> &zeros, const std::optional<Array> &global,
         const Array &output) {
        DLTensor c = toDLTensor(codes), s = toDLTensor(scales),
                 out = toDLTensor(output);
        OptionalTensor z(zeros), g(global);
        nb::gil_scoped_release release;
        return result(
            lowbit_dequantize(scheme.c_str(), &c, &s, z.get(), g.get(), &out));
      },
      nb::arg("scheme"), nb::arg("codes"), nb::arg("scales"),
      nb::arg("zeros").none(), nb::arg("global").none(), nb::arg("output"));

  nb::class_<Kernel>(m, "Kernel")
      .def_prop_ro("spec",
                   [](const Kernel &k) {
                     return std::string(lowbit_kernel_spec(k.handle));
                   })
      .def_prop_ro("ptx",
                   [](const Kernel &k) {
                     return std::string(lowbit_kernel_ptx(k.handle));
                   })
      .def_prop_ro(
          "arg_count",
          [](const Kernel &k) { return lowbit_kernel_arg_count(k.handle); })
      .def("arg",
           [](const Kernel &k, size_t index, int64_t rows, int64_t cols) {
             lowbit_arg_info info{};
             lowbit_status status =
                 lowbit_kernel_arg(k.handle, index, rows, cols, &info);
             nb::dict dict;
             if (status == LOWBIT_OK) {
               dict["role"] = int(info.role);
               dict["is_output"] = bool(info.is_output);
               dict["dtype"] = dtypeDict(info.dtype);
               dict["shape"] = nb::make_tuple(info.shape[0], info.shape[1]);
             }
             return std::make_tuple(result(status), dict);
           })
      .def("run",
           [](const Kernel &k, const std::vector<Array> &arrays) {
             std::vector<DLTensor> tensors = toDLTensors(arrays);
             nb::gil_scoped_release release;
             return result(
                 lowbit_kernel_run(k.handle, tensors.data(), tensors.size()));
           })
      .def("launch", [](const Kernel &k, uintptr_t stream,
                        const std::vector<Array> &arrays) {
        std::vector<DLTensor> tensors = toDLTensors(arrays);
        nb::gil_scoped_release release;
        return result(lowbit_kernel_launch(k.handle,
                                           reinterpret_cast<void *>(stream),
                                           tensors.data(), tensors.size()));
      });

  nb::class_<KvKernel>(m, "KvKernel")
      .def_prop_ro("spec",
                   [](const KvKernel &k) {
                     return std::string(lowbit_kv_kernel_spec(k.handle));
                   })
      .def_prop_ro("ptx",
                   [](const KvKernel &k) {
                     return std::string(lowbit_kv_kernel_ptx(k.handle));
                   })
      .def_prop_ro("param_count",
                   [](const KvKernel &k) {
                     return lowbit_kv_kernel_param_count(k.handle);
                   })
      .def("param",
           [](const KvKernel &k, size_t index) {
             lowbit_kv_param_info info{};
             lowbit_status status =
                 lowbit_kv_kernel_param(k.handle, index, &info);
             nb::dict dict;
             if (status == LOWBIT_OK) {
               dict["name"] = std::string(info.name);
               dict["is_output"] = bool(info.is_output);
               dict["dtype"] = dtypeDict(info.dtype);
               nb::list shape, names;
               for (int32_t d = 0; d < info.ndim; ++d) {
                 shape.append(info.shape[d]);
                 names.append(std::string(info.dim_names[d]));
               }
               dict["shape"] = nb::tuple(shape);
               dict["dim_names"] = nb::tuple(names);
             }
             return std::make_tuple(result(status), dict);
           })
      .def("run",
           [](const KvKernel &k, const std::vector<Array> &arrays) {
             std::vector<DLTensor> tensors = toDLTensors(arrays);
             nb::gil_scoped_release release;
             return result(lowbit_kv_kernel_run(k.handle, tensors.data(),
                                                tensors.size()));
           })
      .def("launch", [](const KvKernel &k, uintptr_t stream,
                        const std::vector<Array> &arrays) {
        std::vector<DLTensor> tensors = toDLTensors(arrays);
        nb::gil_scoped_release release;
        return result(lowbit_kv_kernel_launch(k.handle,
                                              reinterpret_cast<void *>(stream),
                                              tensors.data(), tensors.size()));
      });

  nb::class_<Jit>(m, "Jit")
      .def_static(
          "create",
          [](std::optional<std::string> cacheDirectory,
             std::optional<std::string> cacheMode) {
            lowbit_jit_options options{
                .cache_directory =
                    cacheDirectory ? cacheDirectory->c_str() : nullptr,
                .cache_mode = cacheMode ? cacheMode->c_str() : nullptr,
                .memory_capacity = 0};
            auto jit = std::make_unique<Jit>();
            lowbit_status status = lowbit_jit_create(&options, &jit->handle);
            if (status != LOWBIT_OK)
              jit.reset();
            return std::make_tuple(result(status), std::move(jit));
          },
          nb::arg("cache_dir").none(), nb::arg("cache_mode").none())
      .def("get",
           [](Jit &jit, const std::string &spec, const std::string &target) {
             auto kernel = std::make_unique<Kernel>();
             lowbit_status status;
             {
               nb::gil_scoped_release release;
               status = lowbit_jit_get(jit.handle, spec.c_str(), target.c_str(),
                                       &kernel->handle);
             }
             if (status != LOWBIT_OK)
               kernel.reset();
             return std::make_tuple(result(status), std::move(kernel));
           })
      .def("get_kv",
           [](Jit &jit, const std::string &spec, const std::string &target) {
             auto kernel = std::make_unique<KvKernel>();
             lowbit_status status;
             {
               nb::gil_scoped_release release;
               status = lowbit_jit_get_kv(jit.handle, spec.c_str(),
                                          target.c_str(), &kernel->handle);
             }
             if (status != LOWBIT_OK)
               kernel.reset();
             return std::make_tuple(result(status), std::move(kernel));
           });
}
