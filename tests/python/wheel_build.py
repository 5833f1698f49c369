"""`pip install .` as a user runs it, from a clean copy of the tree: builds
the wheel, installs it into a fresh venv, runs wheel_check.py there, then
moves the venv and runs it again (the wheel is relocatable).

    wheel_build.py SOURCE_DIR WORK_DIR [cmake.define.NAME=VALUE ...]

The copy (WORK_DIR/src) holds exactly the files `git ls-files` lists in
SOURCE_DIR's working tree (tracked and untracked-but-not-ignored, as they
are on disk), so a file the build needs but git ignores fails here. It is
updated in place (unchanged files keep their times) and its build
directory, WORK_DIR/src/build, is kept: a rerun rebuilds what changed. At
that place the compile commands read like the main build's (SOURCE/build),
so a compiler cache (ccache, base_dir) serves the first build from the
main build's objects. Only the module's targets are built
(pyproject.toml's build.targets).

The build requirements (pyproject.toml's build-system.requires) and numpy
(tools/python-requirements.txt's pin) are downloaded once into
WORK_DIR/dists; the build env and the fresh venv install from there with
--no-index, so a rerun needs no network. The wheel is built in that
persistent build env with --no-build-isolation (what pip's isolation
would install, without a fresh download and a new nanobind path each
run). Each phase's time is printed."""

import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def log(message):
    print(f"wheel: {message}", flush=True)


def run(command, **kwargs):
    log("$ " + " ".join(command))
    subprocess.run(command, check=True, **kwargs)


def build_requires(source):
    with open(os.path.join(source, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib

        return tomllib.loads(text)["build-system"]["requires"]
    except ImportError:  # Python < 3.11: the one list this script reads.
        listed = re.search(r"^requires\s*=\s*\[(.*?)\]", text, re.M | re.S)
        return re.findall(r'"([^"]+)"', listed.group(1))


def numpy_pin(source):
    path = os.path.join(source, "tools", "python-requirements.txt")
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("numpy=="):
                return line.strip()
    raise SystemExit(f"{path}: no numpy== pin")


def sync_tree(source, copy):
    """Makes `copy` hold exactly git's file list of `source`'s working
    tree (its build/ directory aside); copies only what differs."""
    listed = subprocess.run(
        ["git", "-C", source, "ls-files", "-z", "--cached", "--others",
         "--exclude-standard"], check=True, capture_output=True).stdout
    files = {name for name in listed.decode().split("\0")
             if name and os.path.lexists(os.path.join(source, name))}
    copied = 0
    for name in files:
        origin, target = os.path.join(source, name), os.path.join(copy, name)
        stat = os.lstat(origin)
        if os.path.lexists(target):
            mine = os.lstat(target)
            if (mine.st_size, mine.st_mtime_ns) == (stat.st_size,
                                                    stat.st_mtime_ns):
                continue
            os.remove(target)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(origin, target, follow_symlinks=False)
        copied += 1
    removed = 0
    for directory, subdirectories, names in os.walk(copy, topdown=True):
        relative = os.path.relpath(directory, copy)
        if relative == ".":
            subdirectories[:] = [d for d in subdirectories if d != "build"]
        for name in names:
            path = os.path.normpath(os.path.join(relative, name))
            if path not in files:
                os.remove(os.path.join(directory, name))
                removed += 1
    log(f"{len(files)} files in the copy ({copied} copied, {removed} removed)")


def make_venv(path, with_pip=True):
    shutil.rmtree(path, ignore_errors=True)
    run([sys.executable, "-m", "venv", path] +
        ([] if with_pip else ["--without-pip"]))
    return os.path.join(path, "bin", "python")


def pip(python, *args, **kwargs):
    run([python, "-m", "pip", "--disable-pip-version-check", "-q", *args],
        **kwargs)


def ensure_dists(dists, pins):
    """Downloads `pins` (and what they need) once; the stamp holds them."""
    stamp = os.path.join(dists, ".pins")
    text = "\n".join(pins) + "\n"
    if os.path.exists(stamp) and open(stamp).read() == text:
        return
    os.makedirs(dists, exist_ok=True)
    pip(sys.executable, "download", "--only-binary=:all:", "-d", dists, *pins)
    with open(stamp, "w") as f:
        f.write(text)


def ensure_build_env(path, dists, requires):
    stamp = os.path.join(path, ".pins")
    text = "\n".join(requires) + "\n"
    python = os.path.join(path, "bin", "python")
    if os.path.exists(stamp) and open(stamp).read() == text:
        return python
    make_venv(path)
    pip(python, "install", "--no-index", "--find-links", dists, *requires)
    with open(stamp, "w") as f:
        f.write(text)
    return python


def check(python, work, label):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("LOWBIT_", "PYTHON", "LD_"))}
    env["LOWBIT_DISABLE_CUDA"] = "1"
    cache = os.path.join(work, "kernel-cache")
    shutil.rmtree(cache, ignore_errors=True)
    run([python, os.path.join(HERE, "wheel_check.py"), cache], env=env,
        cwd=work)
    log(f"check passed ({label})")


def main():
    source, work = (os.path.abspath(path) for path in sys.argv[1:3])
    defines = sys.argv[3:]
    times = {}
    start = phase = time.monotonic()

    def lap(name):
        nonlocal phase
        now = time.monotonic()
        times[name] = now - phase
        phase = now

    copy = os.path.join(work, "src")
    os.makedirs(copy, exist_ok=True)
    sync_tree(source, copy)
    lap("copy")

    requires = build_requires(source)
    dists = os.path.join(work, "dists")
    ensure_dists(dists, requires + [numpy_pin(source)])
    builder = ensure_build_env(os.path.join(work, "build-env"), dists,
                               requires)
    lap("build env")

    wheels = os.path.join(work, "wheel")
    shutil.rmtree(wheels, ignore_errors=True)
    settings = ["--config-settings=build-dir=build"] + [
        f"--config-settings={define}" for define in defines]
    # As many compile jobs as the test run was given (tools/run-tests).
    env = dict(os.environ)
    if "LOWBIT_JOBS" in env:
        env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", env["LOWBIT_JOBS"])
    pip(builder, "wheel", "--no-build-isolation", "--no-deps", "--no-index",
        "-w", wheels, *settings, copy, env=env)
    (wheel,) = os.listdir(wheels)
    size = os.path.getsize(os.path.join(wheels, wheel))
    lap("wheel")

    # The fresh venv gets numpy and the wheel only, through the build
    # env's pip (pip --python), which saves installing pip itself.
    venv = os.path.join(work, "venv")
    python = make_venv(venv, with_pip=False)
    pip(builder, "--python", python, "install", "--no-index", "--find-links",
        dists, os.path.join(wheels, wheel))
    lap("install")

    check(python, work, "installed")
    moved = os.path.join(work, "venv-moved")
    shutil.rmtree(moved, ignore_errors=True)
    os.rename(venv, moved)
    check(os.path.join(moved, "bin", "python"), work, "venv moved")
    lap("checks")

    log(f"{wheel}: {size / 2**20:.1f} MiB")
    log("seconds: " + ", ".join(f"{name} {seconds:.1f}"
                                for name, seconds in times.items()) +
        f"; total {time.monotonic() - start:.1f}")


if __name__ == "__main__":
    main()
