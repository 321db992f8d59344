"""``python -m core bench-queries``: query rates on the dungeon navmesh next to Detour's.

Detour's native figures (C++, this machine class, dungeon) and the issue's targets are printed
beside ours. Queries: points drawn near the navmesh surface (seeded), pairs of them for paths,
rays of up to 10 units from them. Each batch runs `runs` times: the rate is the best run (the
navmesh's query-independent tables are built once, by the first run, as Detour's are baked
into its tile data); the first run's seconds are printed too. Not a test: it prints figures
and never fails on speed.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..errors import VoxNavError

F32 = np.float32

#: Detour C++ on dungeon, queries per second.
DETOUR_RATE = {
    "find_nearest_poly": 4.6e6,
    "raycast": 14e6,
    "get_poly_height": 10e6,
    "find_path+find_straight_path": 417e3,
    "find_path": 662e3,
}
#: The issue's floors, queries per second.
TARGET_RATE = {
    "find_nearest_poly": 1e6,
    "raycast": 1e6,
    "get_poly_height": 2e6,
    "find_path+find_straight_path": 50e3,
}


def _surface_points(query, n: int, rng) -> np.ndarray:
    """Random points over random polygons (inside their 2D outline), lifted 0.3 wu."""
    nav = query.nav
    ref = rng.integers(0, nav.poly_count, n)
    v = nav.poly_pos[ref]  # (n, 6, 3) Y-up
    w = rng.random((n, 6)).astype(F32) * (np.arange(6)[None] < nav.poly_vert_count[ref][:, None])
    w /= w.sum(axis=1, keepdims=True)
    p = np.einsum("nk,nkc->nc", w, v).astype(F32)
    p[:, 1] += F32(0.3)
    return p[:, [0, 2, 1]].copy()


#: CPU seconds of this process: the figures do not depend on how busy a shared machine is.
clock = time.process_time


def run_query_bench(meshes=None, n: int = 10000, runs: int = 3) -> int:
    from ..config import NavConfig
    from .cli import build_navmesh
    from .query import NavMeshQuery

    if n < 1:
        raise VoxNavError(f"--pairs must be >= 1, got {n}")
    folder = Path(meshes) if meshes else Path(__file__).resolve().parents[3] / "shared" / "meshes"
    path = folder / "dungeon.obj"
    if not path.exists():
        raise VoxNavError(f"{path} not found: pass --meshes with the folder holding dungeon.obj")
    nav = build_navmesh(path, True, NavConfig())
    q = NavMeshQuery(nav)
    rng = np.random.default_rng(1)
    pts = _surface_points(q, n, rng)
    half = (2.0, 2.0, 4.0)
    rows = []

    def timed(fn):
        """(first run's CPU seconds, best run's, result of the last run)."""
        times = []
        out = None
        for _ in range(max(1, runs)):
            t0 = clock()
            out = fn()
            times.append(clock() - t0)
        return times[0], min(times), out

    first, best, near = timed(lambda: q.find_nearest_poly_batch(pts, half))
    rows.append(("find_nearest_poly", n, first, best))
    ok = near.ref >= 0
    refs, at = near.ref[ok], near.point[ok]
    first, best, _ = timed(lambda: q.get_poly_height_batch(refs, at))
    rows.append(("get_poly_height", refs.shape[0], first, best))
    ends = (at + rng.normal(0, 5, at.shape) * np.array([1, 1, 0])).astype(F32)
    first, best, _ = timed(lambda: q.raycast_batch(refs, at, ends))
    rows.append(("raycast", refs.shape[0], first, best))
    a = rng.integers(0, refs.shape[0], n)
    b = rng.integers(0, refs.shape[0], n)
    f1, b1, corr = timed(lambda: q.find_path_batch(refs[a], refs[b], at[a], at[b]))
    f2, b2, _ = timed(lambda: q.find_straight_path_batch(at[a], at[b], corr))
    rows.append(("find_path", n, f1, b1))
    rows.append(("find_straight_path", n, f2, b2))
    rows.append(("find_path+find_straight_path", n, f1 + f2, b1 + b2))
    first, best, _ = timed(lambda: q.find_distance_to_wall_batch(refs, at, 5.0))
    rows.append(("find_distance_to_wall", refs.shape[0], first, best))

    print(f"dungeon navmesh: {nav.poly_count} polygons; batches of {n}; CPU seconds, best of "
          f"{max(1, runs)} (first run apart)")  # fmt: skip
    print(f"{'query':<30}{'count':>8}{'first s':>9}{'best s':>9}{'per s':>12}{'target':>11}"
          f"{'':>9}{'Detour':>12}{'ours/Detour':>12}")  # fmt: skip
    for name, count, first, sec in rows:
        rate = count / sec if sec > 0 else float("inf")
        det = DETOUR_RATE.get(name)
        tgt = TARGET_RATE.get(name)
        verdict = ("met" if rate >= tgt else "NOT MET") if tgt else ""
        print(
            f"{name:<30}{count:>8}{first:>9.3f}{sec:>9.3f}{rate:>12,.0f}"
            + (f"{tgt:>11,.0f}{verdict:>9}" if tgt else f"{'':>20}")
            + (f"{det:>12,.0f}{rate / det:>11.2f}x" if det else "")
        )
    # The headline figure (#12): path pairs per CPU-second against target and Detour.
    name = "find_path+find_straight_path"
    _, count, _, sec = next(r for r in rows if r[0] == name)
    rate = count / sec if sec > 0 else float("inf")
    target, native = TARGET_RATE[name], DETOUR_RATE[name]
    print(
        f"find_path + find_straight_path: {rate:,.0f} pairs per CPU-second; target "
        f"{target:,.0f}: {'met' if rate >= target else 'NOT met'}; Detour native "
        f"{native:,.0f}/s: {native / rate:.1f}x slower"
    )
    # One interactive query: nearest x2, path, straight path (median of 50, or of the pairs
    # there are: --pairs 49 read past the end).
    times = []
    interactive = min(50, pts.shape[0])
    for i in range(interactive):
        s, g = pts[i], pts[-1 - i]
        t0 = clock()
        rs, rg = q.find_nearest_poly(s, half), q.find_nearest_poly(g, half)
        if rs.ref >= 0 and rg.ref >= 0:
            corridor = q.find_path(rs.ref, rg.ref, rs.point, rg.point)
            q.find_straight_path(rs.point, rg.point, corridor.polys)
        times.append(clock() - t0)
    print(f"one interactive path (2 nearest + path + straight), median of {interactive}: "
          f"{np.median(times) * 1000:.2f} ms (target <= 2 ms)")  # fmt: skip
    return 0
