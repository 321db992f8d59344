"""core.heap: with glibc, freed arrays stay in the process instead of being faulted in again."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import heap
from core.context import BuildContext
from core.errors import VoxNavError

ROOT = Path(__file__).resolve().parents[2]

# In a fresh interpreter: optionally set the thresholds, then allocate and write arrays of
# 1..8 MiB one after another, freeing each, three times over; report the page faults of each
# pass. A pass that reuses freed memory faults in (almost) nothing.
_PROBE = """
import json, resource, sys
import numpy as np
from core import heap
applied = heap.keep_freed_memory() if sys.argv[1] == "set" else None
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for mib in range(1, 9):
        block = np.ones(mib << 17)  # mib MiB of float64, every page written
        del block
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"applied": applied, "faults": faults}))
"""


def _probe(mode: str, **env: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, mode],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(run.stdout)


def _is_glibc_linux() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    return getattr(ctypes.CDLL(None), "gnu_get_libc_version", None) is not None


def test_answer_is_fixed_per_process():
    first = heap.keep_freed_memory()
    assert heap.keep_freed_memory() is first
    BuildContext()  # every build context asks; the answer stays
    assert heap.keep_freed_memory() is first
    assert first is _is_glibc_linux()


@pytest.mark.skipif(not _is_glibc_linux(), reason="the thresholds exist only in glibc")
def test_freed_arrays_are_reused_not_faulted_in_again():
    kept = _probe("set")
    assert kept["applied"] is True
    # Pages of 4 KiB: the first pass faults in most of the largest array's 2,048 (the heap
    # grows by what its free top lacks).
    assert kept["faults"][0] >= 1024
    assert max(kept["faults"][1:]) < 200
    # glibc's adaptive defaults map each array that outgrows the threshold afresh and give
    # memory back, so the next pass faults in thousands of pages again.
    default = _probe("leave")
    assert default["applied"] is None
    assert default["faults"][1] >= 1024


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_opt_out_leaves_the_allocator_alone(value):
    probe = _probe("set", **{heap.OPT_OUT_VARIABLE: value})
    assert probe["applied"] is False


def test_an_unknown_opt_out_value_is_refused_with_the_accepted_ones(monkeypatch):
    monkeypatch.setattr(heap, "_applied", None)  # as in a fresh process
    monkeypatch.setenv(heap.OPT_OUT_VARIABLE, "maybe")
    with pytest.raises(VoxNavError, match=r"VOXNAV_KEEP_HEAP='maybe'.*0 \(off, false, no\)"):
        heap.keep_freed_memory()
    with pytest.raises(VoxNavError):  # asked again, not taken as an answer
        BuildContext()
    monkeypatch.setenv(heap.OPT_OUT_VARIABLE, "yes")
    assert heap.keep_freed_memory() is _is_glibc_linux()
