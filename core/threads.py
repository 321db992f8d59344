"""How many threads a stage may use for its NumPy work.

Several stages split large arrays into pieces that run on two threads (NumPy releases the GIL
inside its loops): the rasterizer's clipping and merge, the ledge filter, the compact links,
the distance field's pass plans, the detail mesh's height patches and the memory check's
fragment bounds. Each names its own
limit (a module constant such as ``rasterize.WORKERS``); `allowed` turns that limit into 1
while the calling thread is inside `single_threaded`, as a tile baked beside other tiles is:
there the other workers already keep every core busy, and extra threads only compete with
them (the 10x10 tiling in 256-cell tiles on 2 processes: 12.0-12.5 s, 14.0-14.7 s with the
rasterizer's threads on).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")

_state = threading.local()


def allowed(limit: int) -> int:
    """Threads a stage may use: ``limit``, or 1 inside `single_threaded` (this thread's)."""
    return 1 if getattr(_state, "single", False) else limit


@contextmanager
def single_threaded() -> Iterator[None]:
    """Stages called from this thread in the block use one thread each."""
    before = getattr(_state, "single", False)
    _state.single = True
    try:
        yield
    finally:
        _state.single = before


def map_pieces(
    work: Callable[[_Item], _Result], pieces: Sequence[_Item], limit: int, min_pieces: int = 2
) -> list[_Result]:
    """``[work(piece) for piece in pieces]``, on up to `allowed` (``limit``) threads when there
    are at least ``min_pieces`` pieces (results in piece order). For pieces whose NumPy work
    releases the GIL and that write disjoint outputs."""
    workers = allowed(limit)
    if workers > 1 and len(pieces) >= max(2, min_pieces):
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(work, pieces))
    return [work(piece) for piece in pieces]
