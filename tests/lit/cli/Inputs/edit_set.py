"""Edits a directory written by `lowbit quantize`, for the error tests.

Usage: edit_set.py DIR ACTION [ARGS...] [--stale-manifest]

Actions:
  put NAME SOURCE       copy the file SOURCE to DIR/NAME
  meta KEY JSON         set meta.json's KEY to the JSON value
  delmeta KEY           remove KEY from meta.json
  rawmeta TEXT          replace meta.json by TEXT and a newline
  byte NAME OFFSET HEX  set the byte at OFFSET from the end of NAME's data
                        (-1 is the last byte) to HEX
  drop NAME             remove DIR/NAME

Afterwards manifest.json is rewritten to match the files (sizes and
SHA-256), so that dequantize reaches the check behind the manifest; with
--stale-manifest it is left as it was, so that the manifest check itself
is what refuses the set.
"""

import hashlib
import json
import os
import shutil
import sys

SET_FILES = ["q.npy", "scales.npy", "zeros.npy", "global_scale.npy", "meta.json"]


def rewrite_manifest(directory):
    path = os.path.join(directory, "manifest.json")
    manifest = json.load(open(path))
    files = {}
    for name in SET_FILES:
        file_path = os.path.join(directory, name)
        if os.path.exists(file_path):
            data = open(file_path, "rb").read()
            files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest["files"] = files
    with open(path, "w") as f:
        json.dump(manifest, f, indent=2)


def main():
    args = sys.argv[1:]
    stale = "--stale-manifest" in args
    args = [a for a in args if a != "--stale-manifest"]
    directory, action, rest = args[0], args[1], args[2:]
    meta_path = os.path.join(directory, "meta.json")
    if action == "put":
        shutil.copyfile(rest[1], os.path.join(directory, rest[0]))
    elif action == "meta":
        meta = json.load(open(meta_path))
        meta[rest[0]] = json.loads(rest[1])
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=2, sort_keys=True)
    elif action == "delmeta":
        meta = json.load(open(meta_path))
        del meta[rest[0]]
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=2, sort_keys=True)
    elif action == "rawmeta":
        with open(meta_path, "w") as f:
            f.write(rest[0] + "\n")
    elif action == "byte":
        path = os.path.join(directory, rest[0])
        data = bytearray(open(path, "rb").read())
        data[int(rest[1])] = int(rest[2], 16)
        open(path, "wb").write(bytes(data))
    elif action == "drop":
        os.remove(os.path.join(directory, rest[0]))
    else:
        sys.exit(f"unknown action {action}")
    if not stale:
        rewrite_manifest(directory)


if __name__ == "__main__":
    main()
