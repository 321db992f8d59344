"""The C allocator's settings for baking: freed arrays stay in the process for the next stage.

A bake allocates and frees hundreds of NumPy arrays of a few KiB to tens of MiB. With glibc's
defaults, an array above its mmap threshold (128 KiB at first, raised to the largest one freed
so far) gets fresh pages from the kernel and hands them back when freed, and the free memory
above the heap's top goes back as soon as it exceeds twice that threshold. Every page that
comes back this way is faulted in and zeroed again on its first write: 4,000-5,500 faults in
each bake of dungeon and nav_test, 10,000 in undulating's, about 8, 10 and 15 ms of their 50,
75 and 320 ms on this project's VMs (2026-11-26; Recast's own runs fault about 350 and 490
pages each).

`keep_freed_memory` fixes both thresholds where glibc's own adaptive rule ends up at most
(mmap above `MMAP_THRESHOLD_BYTES`, trimming above twice it), so arrays below 32 MiB come from
the heap, which keeps up to `TRIM_THRESHOLD_BYTES` of free memory: a bake then reuses the
pages the stages before it (or the bake before it) freed. Measured in one sitting, first bake
in a fresh process / later bakes: dungeon 72 -> 62 / 60 -> 50 ms, nav_test 103 -> 84 /
81 -> 73 ms, the 4x4 tiling 720 -> 638 / 583 -> 575 ms; the 10x10 tiling, whose large
arrays are above 32 MiB either way, within noise; resident peaks within 10 MiB. The process
keeps at most `TRIM_THRESHOLD_BYTES` of freed memory at the heap's top after a bake.

Only where the process's C library is glibc (found by its ``gnu_get_libc_version`` and
``mallopt``); elsewhere, or with ``VOXNAV_KEEP_HEAP=0`` in the environment, nothing changes.
Inside Blender the setting reaches only the memory Blender lets glibc allocate.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

#: mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Arrays from this size get their own mapping [Units: bytes]: glibc's ceiling for its
#: adaptive threshold on 64-bit systems.
MMAP_THRESHOLD_BYTES = 32 << 20
#: Free memory at the heap's top the process keeps [Units: bytes]: twice the mmap threshold,
#: as glibc's adaptive rule sets it.
TRIM_THRESHOLD_BYTES = 64 << 20
#: Environment variable that turns the setting off when "0".
OPT_OUT_VARIABLE = "VOXNAV_KEEP_HEAP"

_lock = threading.Lock()
_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Set the allocator's thresholds (once per process; later calls return the first
    answer). True when they were set, False when the C library is not glibc, the platform is
    not Linux, or ``VOXNAV_KEEP_HEAP=0``."""
    global _applied
    if _applied is None:
        with _lock:
            if _applied is None:
                _applied = _set_thresholds()
    return _applied


def _set_thresholds() -> bool:
    if os.environ.get(OPT_OUT_VARIABLE, "").strip() == "0":
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
    if not mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES):
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
