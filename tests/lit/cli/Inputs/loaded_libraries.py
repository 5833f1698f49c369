"""Runs a command under the dynamic loader's LD_DEBUG=libs and says which
of lowbit's heavy libraries the process loaded.

Usage: loaded_libraries.py COMMAND [ARG...]

Prints one line: "mlir=yes|no llvm=yes|no compiler=yes|no exit=N
nvjitlink=yes|no", where compiler is liblowbit-compiler.so and nvjitlink
libnvJitLink (dlopen'd to link a cubin). The command's own output is
dropped.
"""

import os
import re
import subprocess
import sys


def main():
    environment = dict(os.environ, LD_DEBUG="libs")
    run = subprocess.run(sys.argv[1:], env=environment, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    loaded = [os.path.basename(path) for path in
              re.findall(r"calling init: (\S+)", run.stderr)]
    if not loaded:
        sys.exit("no 'calling init' lines: LD_DEBUG=libs did not work")

    def has(prefix):
        return "yes" if any(name.startswith(prefix) for name in loaded) else "no"

    print("mlir={} llvm={} compiler={} exit={} nvjitlink={}".format(
        has("libMLIR"), has("libLLVM"), has("liblowbit-compiler"), run.returncode,
        has("libnvJitLink")))


if __name__ == "__main__":
    main()
