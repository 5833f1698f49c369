# lit configuration for lowbit's FileCheck tests.
import os

import lit.formats

config.name = "lowbit"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lowbit_obj_root, "tests", "lit")

# lowbit's tools first, then LLVM's (FileCheck, not, count).
config.environment["PATH"] = os.pathsep.join(
    [config.lowbit_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])]
)
# The tests verify the IR after every pass; release builds do not
# (docs/pipeline.md).
config.environment["LOWBIT_VERIFY_PASSES"] = "1"
# Kernels cached by the tests stay in the build tree: never read from, or
# written to, the user's cache (a kernel cached there by hand once made a
# test that expects a compile see a hit instead). A test that needs an
# empty cache still names its own directory.
config.environment["LOWBIT_CACHE_DIR"] = os.path.join(config.test_exec_root, "kernel-cache")
# The sanitizer build (cmake/Sanitizers.cmake): what a python3 that imports
# the instrumented module needs ("NAME=VALUE;..."); a script that starts one
# (Inputs/cache_modes.py) adds it to that process alone. Empty otherwise.
config.environment["LOWBIT_SANITIZER_PYTHON_ENV"] = getattr(config, "python_sanitizer_env", "")
if config.environment["LOWBIT_SANITIZER_PYTHON_ENV"]:
    config.available_features.add("asan")
config.substitutions.append(("%lowbit_src", config.lowbit_src_root))
config.substitutions.append(("%lowbit_bin", config.lowbit_tools_dir))
config.substitutions.append(("%python", config.python_executable))
# LOWBIT_STATIC_COMPILER (cmake/LowbitStaticCompiler.cmake): the compiler
# library holds MLIR and LLVM itself, so a miss loads no libMLIR/libLLVM.
# `FileCheck -DMLIR_ON_MISS=%mlir_on_miss` checks whichever this build is.
static_compiler = config.lowbit_static_compiler.upper() in ("ON", "1", "TRUE", "YES")
if static_compiler:
    config.available_features.add("static-compiler")
config.substitutions.append(("%mlir_on_miss", "no" if static_compiler else "yes"))
# `%expect-exit N cmd...`: passes if cmd exits with exactly N and prints
# nothing on stdout; echoes cmd's stderr so FileCheck can check the message.
# (lit's internal shell has no `$?`, and `not` accepts any non-zero code.)
config.substitutions.append(
    ("%expect-exit", "{} {}".format(config.python_executable,
                                     os.path.join(config.test_source_root, "cli", "Inputs", "expect-exit.py")))
)
