"""Runs a command with its address space limited (as `ulimit -v KB` does).

Usage: under_limit.py KB COMMAND...
"""

import os
import resource
import sys

limit = int(sys.argv[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
os.execvp(sys.argv[2], sys.argv[2:])
