"""The memory model (core.memory): bakes stay under memory_limit or are refused up front, and
estimates bound what the stages really allocate."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tracemalloc
from contextlib import contextmanager

import numpy as np
import pytest

from core import memory, pipeline
from core.config import NavConfig
from core.context import BuildContext
from core.errors import VoxNavError
from core.objio import read_obj

from ..conftest import REPO
from .refdata import MESHES, mesh_path

MIB = 1024**2


def plane(size: float) -> tuple[np.ndarray, np.ndarray]:
    """A size x size square at z = 0, two triangles (up-facing)."""
    verts = np.array([[0, 0, 0], [size, 0, 0], [size, size, 0], [0, size, 0]], np.float32)
    return verts, np.array([[0, 1, 2], [0, 2, 3]], np.int32)


def stack(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n random triangles overlapping in a 10 m box: dense columns."""
    rng = np.random.default_rng(seed)
    verts = rng.uniform(0, 10, (3 * n, 3)).astype(np.float32)
    return verts, np.arange(3 * n, dtype=np.int32).reshape(-1, 3)


_CHILD = r"""
import json, resource, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
size, cell_size, limit = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
resource.setrlimit(resource.RLIMIT_AS, (limit + 2 * 1024**3, limit + 2 * 1024**3))
from core import pipeline
from core.config import NavConfig
from core.errors import VoxNavError
verts = np.array([[0, 0, 0], [size, 0, 0], [size, size, 0], [0, size, 0]], np.float32)
tris = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
out = {}
try:
    result = pipeline.bake(verts, tris, NavConfig(cell_size=cell_size, memory_limit=limit))
    out["polys"] = result.counts["polys"]
except VoxNavError as exc:
    out["refused"] = str(exc)
except MemoryError:
    out["memory_error"] = True
# VmHWM is this process image's own peak: ru_maxrss would carry over the peak of the (large)
# pytest process this child was forked from, since Linux keeps it across exec.
with open("/proc/self/status") as status:
    hwm = next(line for line in status if line.startswith("VmHWM:"))
out["maxrss"] = int(hwm.split()[1]) * 1024
print(json.dumps(out))
"""


def bake_plane_in_subprocess(size: float, cell_size: float, limit: int) -> dict:
    """Bake a plane in a fresh interpreter; its address space is capped a little above the
    limit so that a bake far beyond it fails fast instead of exhausting the machine."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(REPO), str(size), str(cell_size), str(limit)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def suggested_cell_size(message: str) -> float:
    return float(re.search(r"use cell_size >= ([0-9.e+-]+)", message).group(1))


def predicted_peak(verts, tris, config: NavConfig) -> int:
    bmin, bmax = pipeline.grid_bounds(verts, config)
    return max(e.bytes for e in memory.estimate_bake(verts, tris, bmin, bmax, config))


# ----------------------------------------------------------------------------------------------
# Planes: refused up front, or baked under the limit (peak RSS of a separate process)


@pytest.mark.parametrize(("size", "limit"), [(1000.0, 1024 * MIB), (500.0, 410 * 10**6)])
def test_large_plane_is_refused_up_front(size, limit):
    """Today's check let these through (1 km: 0.54 GiB estimated, 13.7 GB used; 500 m at
    410 MB: 5.6 GB used); now the prediction of every stage refuses them before rasterizing."""
    out = bake_plane_in_subprocess(size, 0.5, limit)
    assert "refused" in out, out
    message = out["refused"]
    assert "memory_limit" in message and "columns" in message and "cell_size >=" in message
    # Refused before anything large was allocated.
    assert out["maxrss"] < 200 * MIB
    # The suggested cell size really fits.
    verts, tris = plane(size)
    fit = suggested_cell_size(message)
    assert fit > 0.5
    assert predicted_peak(verts, tris, NavConfig(cell_size=fit, memory_limit=limit)) <= limit


def test_plane_accepted_stays_under_the_limit():
    """The 1 km plane at a cell size that fits 300 MiB bakes with a peak resident size under
    300 MiB (today its detail stage alone took about 550 MB)."""
    limit = 300 * MIB
    out = bake_plane_in_subprocess(1000.0, 2.5, limit)
    assert "polys" in out, out
    assert out["polys"] > 0
    assert out["maxrss"] <= limit, f"peak RSS {out['maxrss'] / MIB:.0f} MiB"


def test_refusal_suggests_a_cell_size_that_is_accepted():
    verts, tris = plane(1000.0)
    config = NavConfig(cell_size=0.5, memory_limit=300 * MIB)
    with pytest.raises(VoxNavError) as info:
        pipeline.bake(verts, tris, config)
    fit = suggested_cell_size(str(info.value))
    assert predicted_peak(verts, tris, config.replace(cell_size=fit)) <= config.memory_limit
    # Two significant digits: a setting a user can type.
    assert len(f"{fit:g}".replace(".", "").strip("0")) <= 2


# ----------------------------------------------------------------------------------------------
# Estimates bound the traced peaks


class _PeakContext(BuildContext):
    """A build context that records each stage's traced (tracemalloc) peak."""

    def __init__(self):
        super().__init__()
        self.peaks: dict[str, int] = {}

    @contextmanager
    def stage(self, name):
        tracemalloc.reset_peak()
        with super().stage(name):
            yield
        self.peaks[name] = tracemalloc.get_traced_memory()[1]


def traced_bake(verts, tris, config):
    ctx = _PeakContext()
    tracemalloc.start()
    try:
        result = pipeline.bake(verts, tris, config, ctx=ctx)
    finally:
        tracemalloc.stop()
    return result, ctx.peaks


def assert_within_estimates(result, peaks):
    """Every stage's traced peak is within its estimate, without the runtime allowance."""
    key = {"mark": "rasterize"} | {s: "filters" for s in peaks if s.startswith("filter_")}
    for stage, peak in peaks.items():
        estimate = result.memory_estimates[key.get(stage, stage)] - memory.RUNTIME_BYTES
        assert peak <= estimate, f"{stage}: traced {peak / MIB:.1f} MiB > {estimate / MIB:.1f}"


def test_dense_overlapping_stack_is_bounded():
    """1500 triangles overlapping in a 10 m box (every column dense): the fragment bound counts
    each triangle, so the rasterizer's traced peak is within the estimate (today's estimate
    capped fragments at 64 per column: 6 MiB against about 25 MiB used)."""
    verts, tris = stack(1500)
    config = NavConfig()
    bmin, bmax = pipeline.grid_bounds(verts, config)
    raster, _columns, fragments = memory.estimate_rasterize(verts, tris, bmin, bmax, 0.3)
    assert fragments > 64 * _columns
    result, peaks = traced_bake(verts, tris, config)
    assert max(peaks["mark"], peaks["rasterize"]) <= raster.bytes - memory.RUNTIME_BYTES
    assert_within_estimates(result, peaks)


def test_plane_stages_within_estimates():
    verts, tris = plane(80.0)
    result, peaks = traced_bake(verts, tris, NavConfig(cell_size=0.5))
    assert result.counts["polys"] > 0
    assert_within_estimates(result, peaks)


@pytest.mark.parametrize("name", MESHES)
def test_shared_mesh_stages_within_estimates(name):
    verts, tris = read_obj(mesh_path(name))
    result, peaks = traced_bake(verts, tris, NavConfig())
    assert_within_estimates(result, peaks)


def test_fragment_bound_holds_per_triangle():
    """The per-triangle bound is never below the fragments the rasterizer really makes."""
    from core import rasterize
    from core.config import grid_size

    verts, tris = stack(300, seed=3)
    verts = np.vstack([verts, plane(10.0)[0]])
    tris = np.vstack([tris, plane(10.0)[1] + 900])
    bmin, bmax = verts.min(axis=0), verts.max(axis=0)
    width, height = grid_size(bmin, bmax, np.float32(0.3))
    areas = rasterize.mark_walkable_triangles(verts, tris, 45.0)
    tri = rasterize.rasterize_fragments(
        verts, tris, areas, bmin, bmax, np.float32(0.3), np.float32(0.2), width, height
    )[0]
    made = np.bincount(tri, minlength=tris.shape[0])
    bound = memory.fragment_bound(verts, tris, bmin, bmax, 0.3)
    assert (made <= bound).all()
    assert bound.sum() < 3 * made.sum()  # and not wildly above it


def test_fragment_bound_in_chunks_on_threads_is_the_same(monkeypatch):
    verts, tris = stack(300, seed=5)
    bmin, bmax = verts.min(axis=0), verts.max(axis=0)
    whole = memory.fragment_bound(verts, tris, bmin, bmax, 0.3)
    monkeypatch.setattr(memory, "BOUND_CHUNK_TRIANGLES", 7)
    for workers in (1, 2):
        monkeypatch.setattr(memory, "BOUND_WORKERS", workers)
        np.testing.assert_array_equal(memory.fragment_bound(verts, tris, bmin, bmax, 0.3), whole)


def test_refused_mid_bake_before_a_stage_that_does_not_fit():
    """Stacked floors have more walkable spans than the up-front prediction (one per column);
    the check before compact uses the real counts and refuses before allocating."""
    verts, tris = [], []
    for k in range(6):
        v, t = plane(60.0)
        v[:, 2] = 3.0 * k
        verts.append(v)
        tris.append(t + 4 * k)
    verts, tris = np.vstack(verts), np.vstack(tris)
    config = NavConfig(cell_size=0.5)
    predicted = predicted_peak(verts, tris, config)
    config = config.replace(memory_limit=int(predicted * 1.05))
    with pytest.raises(VoxNavError, match=r"in the (filters|compact|erode|regions) stage.*spans"):
        pipeline.bake(verts, tris, config)


def stacked_floors(n: int, size: float, gap: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """n size x size floors, gap apart (every column holds n spans)."""
    verts, tris = [], []
    for k in range(n):
        v, t = plane(size)
        v[:, 2] = gap * k
        verts.append(v)
        tris.append(t + 4 * k)
    return np.vstack(verts), np.vstack(tris)


def test_filters_estimate_does_not_charge_span_pairs():
    """The ledge filter walks a neighbour column's spans one round at a time over a block of
    spans, never holding (span, neighbour span) pairs: 2000 stacked floors were refused as
    needing 158 GiB in the filters (40 bytes per pair) and peak at 343 MB. Here 500 floors
    (250,000 pairs per pair of columns): about 2 GiB charged before, a few MiB traced."""
    verts, tris = stacked_floors(500, 3.0)
    result, peaks = traced_bake(verts, tris, NavConfig())
    assert result.heightfield.span_count >= 500 * 100
    assert result.memory_estimates["filters"] < memory.RUNTIME_BYTES + 64 * MIB
    assert_within_estimates(result, peaks)


@pytest.mark.parametrize("floors, size", [(30, 12.0), (100, 10.0)])
def test_stacked_floors_are_estimated_closely(floors, size):
    """Walkable floors 3 m apart. The compact stage was charged 80 bytes per (span,
    neighbour-column span) pair it never holds, and regions 320 per pair of spans sharing a
    column (it held them all twice as int64, and made a Python tuple per region pair): 30
    floors of 30 x 30 m were estimated at 715 MiB in compact (traced 48) and 1.46 GiB in
    regions (traced 358, now 134), so bakes that fit were refused. Every estimate still
    bounds its traced peak, and neither is more than 4x it."""
    verts, tris = stacked_floors(floors, size, gap=3.0)
    result, peaks = traced_bake(verts, tris, NavConfig())
    assert result.compact.span_count >= floors * (size / 0.3 - 2) ** 2 * 0.8
    assert_within_estimates(result, peaks)
    for stage in ("compact", "regions"):
        estimate = result.memory_estimates[stage] - memory.RUNTIME_BYTES
        assert estimate <= 4 * peaks[stage], f"{stage}: {estimate / MIB:.0f} MiB estimated"


def test_stacked_checkerboards_stay_within_the_regions_estimate():
    """30 levels of 0.6 m squares in a checkerboard, each level shifted (many regions, and a
    distinct pair of them in nearly every column), monotone partitioning: the regions stage
    traced 97.4 MiB against an estimate of 94.6 (a review), and its contours stage, whose
    one-span regions have four boundary edges a span, 34.8 MiB against 22.4."""
    rng = np.random.default_rng(1)
    verts, tris = [], []
    for level in range(30):
        shift = rng.uniform(0, 0.6, 2)
        cells = [(i, j) for i in range(30) for j in range(30) if (i + j + level) % 2 == 0]
        corner = np.array(cells, np.float64) * 0.6 + shift
        quad = np.array([[0, 0], [0.6, 0], [0.6, 0.6], [0, 0.6]])
        xy = (corner[:, None, :] + quad[None]).reshape(-1, 2)
        verts.append(np.column_stack([xy, np.full(xy.shape[0], 2.2 * level)]))
        base = 4 * np.arange(len(cells))[:, None] + sum(v.shape[0] for v in verts[:-1])
        tris.append(np.concatenate([base + [0, 1, 2], base + [0, 2, 3]]))
    config = NavConfig(partition="monotone", region_min_size=0, region_merge_size=0,
                       agent_radius=0.0)  # fmt: skip
    result, peaks = traced_bake(
        np.concatenate(verts).astype(np.float32), np.concatenate(tris).astype(np.int32), config
    )
    assert result.counts["regions"] > 1000
    assert_within_estimates(result, peaks)


def test_regions_floor_sets_are_checked_once_known(monkeypatch):
    """The pairs of regions sharing a column are known only once the regions are: their
    floor sets are checked then, before they are filled, and refuse the bake in the regions
    stage, naming them."""
    import core.regions as regions_module

    verts, tris = stacked_floors(4, 10.0, gap=3.0)
    config = NavConfig(memory_limit=2 * 1024**3)
    assert pipeline.bake(verts, tris, config).counts["polys"] > 0
    monkeypatch.setattr(regions_module, "REGIONS_BYTES_PER_FLOOR_PAIR", 1 << 30)
    with pytest.raises(VoxNavError, match=r"in the regions stage.*pairs of regions sharing"):
        pipeline.bake(verts, tris, config)


def test_the_regions_estimate_grows_with_the_floors_stacked_in_a_column():
    """Floors stacked 100 high peaked at 1.7 GiB in regions (the merge holds every pair of
    spans sharing a column) against a flat 166 MiB estimate: the bake was allowed."""
    from types import SimpleNamespace

    from core import memory

    def chf(per_column):
        counts = np.asarray(per_column, dtype=np.int64)
        start = np.concatenate([[0], np.cumsum(counts)])
        return SimpleNamespace(
            width=len(counts), height=1, cell_start=start, span_count=int(start[-1])
        )

    flat, stacked = chf([1] * 100), chf([100] * 1)  # the same 100 spans
    assert memory.column_pairs(flat) == 0 and memory.column_pairs(stacked) == 4950
    grow = (
        memory.estimate_open_stage("regions", stacked, 100).bytes
        - memory.estimate_open_stage("regions", flat, 100).bytes
    )
    # 99 columns fewer, 4950 pairs more.
    per_column = memory.OPEN_STAGE_BYTES_PER_COLUMN
    assert grow >= 4950 * memory.REGIONS_BYTES_PER_COLUMN_PAIR - 99 * (per_column + 64)
    assert memory.estimate_open_stage("distance", stacked, 100).bytes <= (
        memory.estimate_open_stage("distance", flat, 100).bytes
    )


def test_automatic_links_are_estimated_and_checked():
    """The links stage had no estimate: a 256 MiB bake with link_spacing 0.01 and
    max_jump_distance 100 peaked at 421 MiB. Its estimate grows with the samples and the
    probe chunk, and a limit below it refuses the bake before the stage runs."""
    from core import memory, pipeline
    from core.config import NavConfig

    from .linkscenes import box, merge

    verts, tris = merge(box((0, 0, -1), (6, 6, 0)), box((7, 0, -1), (13, 6, 0)))
    config = NavConfig(auto_links=True)
    result = pipeline.bake(verts, tris, config)
    assert "links" in result.memory_estimates
    dense = config.replace(link_spacing=0.01, max_jump_distance=100.0)
    heavy = pipeline.bake(verts, tris, dense).memory_estimates["links"]
    assert heavy > result.memory_estimates["links"] + 20 * 2**20
    before_links = max(v for k, v in result.memory_estimates.items() if k != "links")
    assert before_links < heavy
    limit = (before_links + heavy) // 2  # every stage before the links fits
    with pytest.raises(VoxNavError, match="in the links stage") as refused:
        pipeline.bake(verts, tris, dense.replace(memory_limit=int(limit)))
    # Its advice is the link settings it grows with, not a cell size (which barely helps).
    assert "raise link_spacing (now 0.01)" in str(refused.value)
    assert "use cell_size" not in str(refused.value)
    assert memory.estimate_links(0, 0, result.compact, 0).bytes < heavy


def test_a_tiles_link_window_is_checked_before_it_is_rasterized():
    """A tile's automatic links rasterize a window reaching max_jump_distance past the tile:
    at 60 wu, 294 x 440 cells for a 32-cell tile, with no estimate of its own (the tile's
    check passed at 100 MiB)."""
    from core import tiles

    verts, tris = read_obj(mesh_path("dungeon"))
    config = NavConfig(auto_links=True, max_jump_distance=60.0, memory_limit=128 * MIB)
    with pytest.raises(VoxNavError, match=r"automatic links' window.*lower max_jump_distance"):
        tiles.bake_tiled(verts, tris, config, 32, workers=1)
    # A short reach fits the same limit.
    config = config.replace(max_jump_distance=3.5)
    assert tiles.bake_tiled(verts, tris, config, 32, workers=1).tiles
