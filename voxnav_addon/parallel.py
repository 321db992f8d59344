"""Parallel tiles inside Blender: which executor this Python can run, measured.

``core.tiles.iter_tiles`` takes any `concurrent.futures.Executor`. Inside Blender:

- **threads** (`ThreadPoolExecutor`) always start, but a tile is many small NumPy calls that
  hold the GIL between them, so threads barely overlap (see the figures in README);
- **processes** need a Python interpreter to start: with the bpy wheel ``sys.executable`` is
  one, but in a real Blender it is the Blender binary, so the pool is started (``spawn``, never
  ``fork`` of a process holding Blender) with Blender's bundled Python found under
  ``sys.prefix``; when there is none, processes are skipped with the reason. Each worker runs
  `_pool_bootstrap.py` first so the extension's ``core`` (NumPy only, no bpy) imports under
  the name Blender gave it.

A spawned worker also re-runs the parent's ``__main__`` script (Blender's ``--python`` script, a
test runner): that would import bpy in a plain Python and kill the worker. Submit jobs inside
`hidden_main` so workers start without it.

`parallel_executor(workers, kind)` returns the executor (None: bake in this thread) and a
note saying what was chosen and why.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import glob
import multiprocessing
import os
import runpy
import sys

#: Executor kinds: "PROCESSES", "THREADS", "NONE" (one tile at a time in Blender's thread).
KINDS = ("PROCESSES", "THREADS", "NONE")


def extension_package() -> tuple[str, str]:
    """(package name, folder) of the extension root (the parent of voxnav_addon)."""
    package = __package__.rpartition(".")[0] if __package__ else ""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return package, root


def worker_python() -> tuple[str | None, str]:
    """The Python interpreter a process pool can start, and why (None: there is none)."""
    exe = sys.executable or ""
    if os.path.basename(exe).lower().startswith("python"):
        return exe, f"sys.executable is Python ({exe})"
    # A real Blender: sys.executable is blender; its Python is bundled under sys.prefix.
    names = ("python3.*", "python3", "python") if os.name != "nt" else ("python.exe",)
    for pattern in names:
        for candidate in sorted(glob.glob(os.path.join(sys.prefix, "bin", pattern))):
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate, f"Blender's bundled Python ({candidate})"
    return None, (
        f"no Python interpreter to start worker processes (sys.executable is {exe!r}, none in "
        f"{os.path.join(sys.prefix, 'bin')})"
    )


def parallel_executor(workers: int, kind: str = "PROCESSES") -> tuple[cf.Executor | None, str]:
    """An executor of ``workers`` for a tiled bake, or None to bake in this thread, and a note
    (empty when nothing needed saying). ``kind`` one of `KINDS`."""
    if workers <= 1 or kind == "NONE":
        return None, ""
    if kind == "THREADS":
        return cf.ThreadPoolExecutor(max_workers=workers), f"{workers} threads"
    python, why = worker_python()
    if python is None:
        return None, f"tiles baked one at a time: {why}"
    package, root = extension_package()
    context = multiprocessing.get_context("spawn")
    if python != sys.executable:
        context.set_executable(python)
    bootstrap = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_pool_bootstrap.py")
    executor = cf.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=runpy.run_path,
        initargs=(bootstrap, {"PACKAGE": package, "ROOT": root}),
    )
    return executor, f"{workers} worker processes ({why})"


@contextlib.contextmanager
def hidden_main():
    """Hide ``__main__``'s file and spec while worker processes start, so ``spawn`` does not
    re-run the parent's main script in them (restored afterwards)."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main and k in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__["__spec__"] = None
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)
