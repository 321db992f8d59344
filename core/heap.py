"""The C allocator's settings for baking: freed arrays stay in the process for the next stage.

A bake allocates and frees hundreds of NumPy arrays of a few KiB to tens of MiB. With glibc's
defaults, an array above its mmap threshold (128 KiB at first, raised to the largest one freed
so far) gets fresh pages from the kernel and hands them back when freed, and the free memory
above the heap's top goes back as soon as it exceeds twice that threshold. Every page that
comes back this way is faulted in and zeroed again on its first write: some 4,200 page faults
in every bake of dungeon, 6,900 in nav_test's and 8,000-9,000 in undulating's, baked again
and again in one process (Recast's own runs fault about 350 and 490 pages each).

`keep_freed_memory` fixes both thresholds where glibc's own adaptive rule ends up at most
(mmap above `MMAP_THRESHOLD_BYTES`, trimming above twice it), so arrays below 32 MiB come from
the heap, and has the heap keep `TOP_PAD_BYTES` of free memory when it trims (by default a
trim hands back everything above 128 KiB: one large free, such as the bench's calibration
workload between two bakes, and the next bake faulted all its pages in again). A bake then
reuses the pages the stages before it (or the bake before it) freed.

Measured 2026-11-26, this tree against the one before, alternating processes, medians of 9
(undulating 7, the 4x4 tiling 5): the first bake in a fresh process / later bakes / later
bakes each after a calibration run (as `python -m core bench` times them), ms: dungeon
80.5 -> 72.3 / 66.0 -> 57.1 / 65.0 -> 57.9; nav_test 116 -> 97 / 94.6 -> 82.0 /
87.6 -> 84.5; undulating 367 -> 357 / 345 -> 323 / 344 -> 319; the 4x4 tiling
658 -> 581 / 598 -> 531 / 595 -> 546. Faults per later bake fall from 1,800-8,900 to under
500; resident peaks within 11 MiB. Afterwards the process keeps at most
`TRIM_THRESHOLD_BYTES` of freed memory at the heap's top (`TOP_PAD_BYTES` after a trim).

Only where the process's C library is glibc (found by its ``gnu_get_libc_version`` and
``mallopt``); elsewhere, or with ``VOXNAV_KEEP_HEAP=0`` (or off, false, no) in the
environment, nothing changes.
Inside Blender the setting reaches only the memory Blender lets glibc allocate.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

from .errors import VoxNavError

#: mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
#: Arrays from this size get their own mapping [Units: bytes]: glibc's ceiling for its
#: adaptive threshold on 64-bit systems.
MMAP_THRESHOLD_BYTES = 32 << 20
#: Free memory at the heap's top the process keeps [Units: bytes]: twice the mmap threshold,
#: as glibc's adaptive rule sets it.
TRIM_THRESHOLD_BYTES = 64 << 20
#: Free memory at the heap's top a trim keeps, and extra room each growth asks for (address
#: space only until written) [Units: bytes].
TOP_PAD_BYTES = 64 << 20
#: Environment variable that turns the setting off ("0", "off", "false" or "no").
OPT_OUT_VARIABLE = "VOXNAV_KEEP_HEAP"
_OFF = frozenset({"0", "off", "false", "no"})
_ON = frozenset({"", "1", "on", "true", "yes"})

_lock = threading.Lock()
_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Set the allocator's thresholds (once per process; later calls return the first
    answer). True when they were set, False when the C library is not glibc, the platform is
    not Linux, or ``VOXNAV_KEEP_HEAP`` is 0 (off, false, no); `VoxNavError` naming the
    accepted values for any other value of it (asked again on the next call)."""
    global _applied
    if _applied is None:
        with _lock:
            if _applied is None:
                _applied = _set_thresholds()
    return _applied


def _wanted() -> bool:
    """Whether ``VOXNAV_KEEP_HEAP`` asks for the setting (unset or empty: yes)."""
    text = os.environ.get(OPT_OUT_VARIABLE, "").strip().lower()
    if text in _OFF:
        return False
    if text in _ON:
        return True
    raise VoxNavError(
        f"{OPT_OUT_VARIABLE}={os.environ[OPT_OUT_VARIABLE]!r} is not understood: set it to 0 "
        "(off, false, no) to leave the C allocator as it is, or 1 (on, true, yes) or unset it "
        "to keep freed memory in the process"
    )


def _set_thresholds() -> bool:
    if not _wanted():
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)  # the symbols the process already has: its own C library
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None or getattr(libc, "gnu_get_libc_version", None) is None:
        return False  # not glibc: its mallopt (if any) does not take these parameters
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success; the mmap threshold first (the trim rule follows it).
    settings = (
        (_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
        (_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
        (_M_TOP_PAD, TOP_PAD_BYTES),
    )
    return all(mallopt(parameter, value) for parameter, value in settings)
