"""core.threads: stages use one thread each where tiles or agents run beside each other."""

from __future__ import annotations

import concurrent.futures as cf
import threading

import numpy as np

from core import rasterize, threads, tiles
from core.config import NavConfig


def test_single_threaded_is_per_thread_and_nests():
    assert threads.allowed(2) == 2
    seen = []
    with threads.single_threaded():
        assert threads.allowed(2) == 1
        with threads.single_threaded():
            assert threads.allowed(2) == 1
        assert threads.allowed(2) == 1  # the inner block restored the outer state
        other = threading.Thread(target=lambda: seen.append(threads.allowed(2)))
        other.start()
        other.join()
    assert seen == [2]  # another thread is not limited
    assert threads.allowed(2) == 2


def test_clip_plan_uses_one_thread_inside_single_threaded(monkeypatch):
    monkeypatch.setattr(rasterize, "WORKERS", 2)
    chunk, workers = rasterize.clip_plan(100_000)
    assert workers == 2 and chunk == rasterize.PARALLEL_CHUNK_TRIANGLES
    assert rasterize.clip_plan(40_000) == (10_000, 2)  # four chunks at least
    assert rasterize.clip_plan(rasterize.PARALLEL_MIN_TRIANGLES - 1)[1] == 1
    with threads.single_threaded():
        assert rasterize.clip_plan(100_000) == (rasterize.CHUNK_TRIANGLES, 1)


class _RecordingPool(cf.ThreadPoolExecutor):
    """A pool that records, for every tile it bakes, whether its stages could use threads."""

    def __init__(self):
        super().__init__(max_workers=2)
        self.inner = []
        self.limited = []

    def submit(self, fn, job, *args, **kwargs):
        self.inner.append(job.inner_threads)

        def run(job=job):
            result = fn(job)
            self.limited.append(threads.allowed(2))
            return result

        return super().submit(run)


def _box_scene():
    verts = np.array([[0, 0, 0], [20, 0, 0], [20, 20, 0], [0, 20, 0]], dtype=np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]], dtype=np.int32)
    return verts, tris


def test_tiles_beside_each_other_bake_single_threaded_and_alone_may_use_threads(monkeypatch):
    verts, tris = _box_scene()
    config = NavConfig()
    pool = _RecordingPool()
    with pool:
        beside = tiles.bake_tiled(verts, tris, config, 32, executor=pool)
    assert pool.inner and not any(pool.inner)
    # The tile's own thread is back to its limit once the tile is done.
    assert set(pool.limited) == {2}
    seen = []
    bake = tiles._bake_tile

    def recording(job):
        seen.append((job.inner_threads, threads.allowed(2)))
        return bake(job)

    monkeypatch.setattr(tiles, "_bake_tile", recording)
    alone = tiles.bake_tiled(verts, tris, config, 32, workers=1)
    assert seen and all(s == (True, 2) for s in seen)
    assert alone.npolys == beside.npolys > 0
    with _RecordingPool() as other:
        tiles.bake_tiled(verts, tris, config, 32, executor=other)
    assert seen[-1] == (False, 1)  # inside the tile, its stages were limited to one thread


def test_map_pieces_keeps_order_and_threads_only_when_allowed():
    """Results come back in piece order; several pieces run on pool threads, one piece or a
    single-threaded caller on the calling thread."""
    main = threading.get_ident()
    seen: list[int] = []

    def work(piece: int) -> int:
        seen.append(threading.get_ident())
        return piece * piece

    assert threads.map_pieces(work, range(7), 2) == [k * k for k in range(7)]
    assert main not in seen
    seen.clear()
    assert threads.map_pieces(work, [3], 2) == [9] and seen == [main]
    seen.clear()
    with threads.single_threaded():
        assert threads.map_pieces(work, range(4), 2) == [0, 1, 4, 9]
    assert set(seen) == {main}
    assert threads.map_pieces(work, [], 2) == []
    seen.clear()
    assert threads.map_pieces(work, [1, 2], 2, min_pieces=3) == [1, 4] and set(seen) == {main}
    seen.clear()
    assert threads.map_pieces(work, [1, 2, 3], 2, min_pieces=3) == [1, 4, 9]
    assert main not in seen
