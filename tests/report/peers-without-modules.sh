#!/usr/bin/env bash
# The GPU check's peer script on interpreters that lack its modules:
#   1. a bare venv (no torch, no Triton): every peer is skipped by name;
#   2. a stand-in torch that has a "device" but whose tensors do nothing,
#      and no Triton: the Triton peers are skipped as "Triton unavailable",
#      the torch peers that fail are skipped with their error, and the run
#      still reaches the last peer.
# Both must exit 0 and leave a complete results file, which
# tools/gpu-results-to-md must turn into a table.
# usage: peers-without-modules.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
python3 -m venv --without-pip "$work/bare"
bare=$work/bare/bin/python
"$bare" -c 'import torch' 2>/dev/null && { echo "bare venv has torch"; exit 1; }

"$bare" "$src/bench/torch_peers.py" --bench 8x8 --out "$work/none.json" > "$work/none.log"
"$bare" - "$work/none.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
peers = results["peers"]
assert len(peers) == 7, peers
assert all(p["skipped"].startswith("torch not installed") for p in peers), peers
assert peers[-1]["name"] == "copy (d2d)"
PY

# A torch stand-in: CUDA "available", every tensor operation fails.
mkdir -p "$work/fake/torch"
cat > "$work/fake/torch/__init__.py" <<'PY'
__version__ = "0.0-standin"
float32 = float8_e4m3fn = uint8 = object()


class _Tensor:
    pass


def randn(*args, **kwargs):
    return _Tensor()


def empty(*args, **kwargs):
    return _Tensor()


def empty_like(tensor):
    return _Tensor()


def compile(fn):
    return fn


class cuda:
    @staticmethod
    def is_available():
        return True
PY
PYTHONPATH=$work/fake "$bare" "$src/bench/torch_peers.py" --bench 8x8 \
  --out "$work/standin.json" > "$work/standin.log"
"$bare" - "$work/standin.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
peers = {p["name"]: p for p in results["peers"]}
assert results["torch_version"] == "0.0-standin", results
assert len(peers) == 7, list(peers)
for name in ("triton fp8 per-token", "triton mxfp4"):
    assert peers[name]["skipped"].startswith("Triton unavailable: "
                                             "ModuleNotFoundError"), peers[name]
assert "AttributeError" in peers["torch fp8 per-tensor"]["skipped"]
assert "skipped" in peers["copy (d2d)"], peers["copy (d2d)"]
PY

"$bare" "$src/tools/gpu-results-to-md" --merge "$work/missing-lowbit.json" \
  "$work/standin.json" --commit test > "$work/table.md"
grep -q '^| triton mxfp4 | 8x8 | - | skipped (Triton unavailable' "$work/table.md"
echo "peers without torch/Triton: ok"
