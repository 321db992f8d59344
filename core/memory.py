"""The memory model: every stage's peak working memory, estimated before the stage runs.

A bake holds a few arrays per grid column, per span and per polygon, and each stage adds its
own temporaries on top. `estimate_bake` predicts every stage's peak from what is known before
rasterizing (the grid, an upper bound on the span fragments, the triangles); the pipeline then
checks each large stage again just before it runs, with the real span, connection and polygon
counts of the stages before it (`estimate_filters`, `estimate_compact`, `estimate_open_stage`,
`estimate_polymesh`, `estimate_detail`), and a stage that learns part of its size only while
it runs (the regions' floors) asks again then (`check_more`). `check` refuses a bake whose
estimate exceeds ``NavConfig.memory_limit`` with a `VoxNavError` that says the estimate, what
drives it and a setting that fits; nothing large has been allocated for that stage yet.

Estimates are absolute: the peak of the traced (NumPy) memory of the bake while the stage runs,
plus `RUNTIME_BYTES` for the interpreter, NumPy and allocator slack, so that a process's peak
resident memory stays under the limit. The constants are bytes per item, measured with
tracemalloc per stage (``python -m core bench`` prints measured peaks beside these estimates)
and rounded up, so that an estimate is an upper bound on the shared meshes, planes, terrains,
stacked floors and dense overlapping stacks.

Fragments (one per triangle per cell it touches) are bounded per triangle, from its
bounding box and area in cells: a convex set of area A and widths wx, wy meets at most
A + 2 (wx + wy) + 4 cells, and never more than its bounding box's cells. Overlapping
triangles each count, so a dense stack is bounded by what rasterizing it really holds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from . import threads
from .config import NavConfig
from .errors import VoxNavError
from .limits import round_up

#: Interpreter, NumPy and allocator slack on top of the traced arrays. [Units: bytes]
RUNTIME_BYTES = 96 * 1024**2
#: Triangles bounded at once by `fragment_bound`.
BOUND_CHUNK_TRIANGLES = 1 << 16
#: Threads computing fragment bounds of chunks at once.
BOUND_WORKERS = min(2, os.cpu_count() or 1)
#: Small arrays and Python objects of any stage, whatever its size. [Units: bytes]
STAGE_FIXED_BYTES = 2 * 1024**2

# Rasterize (mark + clip + merge). [Units: bytes per item]
#: Per bounded fragment: its packed sort key and payload (12 bytes; the merge reads the
#: pieces range by range since 2026-11-25) and, as measured before that, a concatenation of
#: both: kept as the bound (the 10x10 tiling's traced rasterize peak fell from 512 to 365 MiB).
RASTER_BYTES_PER_FRAGMENT = 24
#: Per bounded fragment of the triangle chunks being clipped at once (clip state; large
#: triangles: a 2-triangle plane measures about 100).
RASTER_CLIP_BYTES_PER_FRAGMENT = 120
#: Per fragment of the column ranges being merged at once (unpacked heights, merge state).
RASTER_MERGE_BYTES_PER_FRAGMENT = 64
#: Per grid column: col_start and the merge's per-column arrays.
RASTER_BYTES_PER_COLUMN = 56
#: Per triangle: gathered corners, bounds, rows and areas of all triangles.
RASTER_BYTES_PER_TRIANGLE = 128
#: Per triangle of the chunks being clipped at once (about 1 KiB, see rasterize.py).
RASTER_CHUNK_BYTES_PER_TRIANGLE = 1024
#: Per fragment of the walked chunks waiting for their group's kept-sets call (triangle, row,
#: column and heights: 28 bytes; `core.rasterize.KEPT_SETS_GROUP_CHUNKS`).
RASTER_WALKED_BYTES_PER_FRAGMENT = 32

# Held from rasterization on: the solid heightfield and its per-stage area copies.
HELD_BYTES_PER_COLUMN = 16
HELD_BYTES_PER_SOLID_SPAN = 16

# Filters: held heightfield plus the filter's temporaries.
FILTER_BYTES_PER_COLUMN = 24
FILTER_BYTES_PER_SOLID_SPAN = 100
#: Per walkable span of the ledge filter's blocks in flight (`core.filters.LEDGE_BLOCK` spans
#: each, on up to `core.filters.WORKERS` threads): its per-span state (columns, floors,
#: ceilings, neighbour starts and counts, running extremes: about 120 bytes) and one round's
#: temporaries. The filter walks a neighbour column's spans one round at a time over the
#: block, so (span, neighbour span) pairs are never held at once: 40 bytes per pair refused
#: 2000 stacked floors as needing 158 GiB (they peak at 343 MB resident).
FILTER_BYTES_PER_BLOCK_SPAN = 256

# Compact: per walkable span, plus per (span, direction) of the link chunks in flight
# (`compact.LINK_CHUNK_SPANS` spans on each of `compact.LINK_WORKERS` threads). Its links are
# found in rounds over the neighbour columns' layers, so (span, neighbour span) pairs are
# never held: charging 80 bytes for each of them (until 2026-11-27) estimated 30 floors of
# 30 x 30 m at 715 MiB, traced at 48 MiB.
COMPACT_BYTES_PER_COLUMN = 32
COMPACT_BYTES_PER_SPAN = 200
COMPACT_BYTES_PER_CHUNK_LINK = 64

# Stages on the compact heightfield (absolute: the compact heightfield, distance field and
# regions held, plus the stage's temporaries), per open span and per column.
OPEN_STAGE_BYTES_PER_SPAN = {
    "erode": 420,
    "distance": 320,
    "regions": 640,
    # 300 until 2026-11-27: 200 random boxes traced 33 % above it (326 MiB against 236).
    "contours": 460,
}
OPEN_STAGE_BYTES_PER_COLUMN = 32
# Per pair of spans sharing a column (`column_pairs`): the merge of regions holds every such
# pair (8 bytes: two int32, kept with the layout for the later stages) and reduces them in
# chunks to the distinct pairs of regions they join (at worst 16 bytes a pair for those, and
# as much again to merge them). The floor sets those region pairs fill are checked once
# their count is known (`REGIONS_BYTES_PER_FLOOR_PAIR`, `check_more`). Until 2026-11-27 the
# estimate charged every span pair a region pair's Python objects (320 bytes): 30 floors of
# 30 x 30 m were estimated at 1.46 GiB and peaked at 134 MiB (an 18x refusal on 10 floors).
REGIONS_BYTES_PER_COLUMN_PAIR = 64
HELD_BYTES_PER_COLUMN_PAIR = 8
#: Per distinct (region, region) pair, counted both ways round, of spans sharing a column:
#: the floor sets of the merge and the arrays that fill them. Random regions on 300 k to 10 M
#: span pairs traced 101-143 bytes; 30 levels of checkerboard squares, monotone, peaked 3 %
#: over the regions estimate at 160 (a review, 2026-11-27). [Units: bytes]
REGIONS_BYTES_PER_FLOOR_PAIR = 200

# Polygon mesh: per contour vertex (adjacency, merge candidates). [Units: bytes] (2048
# until 2026-11-27: random boxes traced 53 % above it.)
POLYMESH_BYTES_PER_CONTOUR_VERTEX = 3200
# Detail: held arrays per open span, plus `PATCH_BYTES_PER_CELL` per patch cell of a chunk.
DETAIL_HELD_BYTES_PER_SPAN = 240
DETAIL_BYTES_PER_POLYGON = 4096


@dataclass(frozen=True)
class StageEstimate:
    """One stage's estimated peak. ``drivers``: what it grows with, as words for the user."""

    stage: str
    #: Estimated peak including `RUNTIME_BYTES`. [Units: bytes]
    bytes: int
    drivers: str
    #: Most of the grid is empty (fewer fragments than 1% of the columns): likely a stray
    #: vertex far from the rest, which the refusal then mentions.
    sparse: bool = False


#: Most fragments `fragment_bound` counts for one triangle (2**40: a million triangles at the
#: cap still sum below 2**63). [Units: cells]
_BOUND_CAP = float(1 << 40)


def fragment_bound(verts, tris, bmin, bmax, cs: float) -> np.ndarray:
    """int64 (m,): an upper bound on the fragments (cells touched) of each triangle.

    The lesser of the triangle's bounding-box cells and A + 2 (wx + wy) + 4 (area and widths
    in cells), after clipping the box to the grid; 0 for triangles outside the grid. Float64,
    no grid allocated. [Units: cells]
    """
    v = np.asarray(verts, dtype=np.float32)
    t = np.asarray(tris, dtype=np.int64)
    lo = np.asarray(bmin, dtype=np.float64)
    hi = np.asarray(bmax, dtype=np.float64)
    out = np.zeros(t.shape[0], dtype=np.int64)
    # One contiguous array per coordinate: operations over the (m, 3) corners would run
    # three values at a time (several times slower).
    by_axis = [np.ascontiguousarray(v[:, k]) for k in range(3)]

    def bound(start: int) -> None:
        part = slice(start, start + BOUND_CHUNK_TRIANGLES)
        out[part] = _fragment_bound(by_axis, t[part], lo, hi, float(cs))

    # Chunks keep the temporaries cache-sized (fresh pages cost more than the arithmetic) and
    # run two at a time on two threads (10x10 tiling: 240 -> 130 ms).
    threads.map_pieces(bound, range(0, t.shape[0], BOUND_CHUNK_TRIANGLES), BOUND_WORKERS)
    return out


def _fragment_bound(by_axis, t, lo, hi, cs: float) -> np.ndarray:
    """`fragment_bound` of one chunk (``by_axis``: the vertices' x, y and z arrays): corners
    gathered in float32 (the input's precision), cell arithmetic in float64, slack for
    float32 rounding in the area bound."""
    corners = [np.ascontiguousarray(t[:, j]) for j in range(3)]
    inside = np.ones(t.shape[0], dtype=bool)
    tmin, tmax, edge_ab, edge_ac = [], [], [], []
    for k in range(3):
        a, b, c = (by_axis[k].take(corner) for corner in corners)
        low = np.minimum(np.minimum(a, b), c).astype(np.float64)
        high = np.maximum(np.maximum(a, b), c).astype(np.float64)
        inside &= (low <= hi[k]) & (high >= lo[k])
        if k < 2:
            tmin.append(low)
            tmax.append(high)
            edge_ab.append((b - a).astype(np.float64))
            edge_ac.append((c - a).astype(np.float64))
    spans = []
    for k in range(2):
        cells_lo = np.floor((np.maximum(tmin[k], lo[k]) - lo[k]) / cs)
        cells_hi = np.floor((np.minimum(tmax[k], hi[k]) - lo[k]) / cs)
        spans.append(cells_hi - cells_lo + 1)
    box = spans[0] * spans[1]
    area = np.abs(edge_ab[0] * edge_ac[1] - edge_ab[1] * edge_ac[0]) * (0.5 / (cs * cs))
    widths = (tmax[0] - tmin[0] + tmax[1] - tmin[1]) * (1.0 / cs)
    bound = np.minimum(box, np.ceil(area + 2 * widths + 6))
    # Capped so that absurd extents (a stray vertex at 1e30) stay valid int64 sums: one such
    # triangle already exceeds any memory limit.
    return np.where(inside, np.minimum(bound, _BOUND_CAP), 0).astype(np.int64)


def grid_columns(bmin, bmax, cs: float) -> tuple[int, int]:
    """(width, height) of the grid in float64, for estimates only (`config.grid_size` is the
    exact float32 rule); safe for any finite extent. [Units: cells]"""
    ext = (np.asarray(bmax, dtype=np.float64) - np.asarray(bmin, dtype=np.float64)) / float(cs)
    return int(np.floor(ext[0] + 0.5)), int(np.floor(ext[1] + 0.5))


def count(n: int) -> str:
    """A count for a message: digits with separators, or 3 significant digits when huge."""
    return f"{n:,}" if n < 10**12 else f"{float(n):.3g}"


def _mib(n: float) -> str:
    if n >= 1024**5:
        return f"{n / 1024**3:.3g} GiB"
    if n >= 1024**3:
        return f"{n / 1024**3:.2f} GiB"
    return f"{n / 1024**2:.0f} MiB"


def format_bytes(n: float) -> str:
    """``n`` bytes as the refusals say them (MiB, GiB from 1 GiB)."""
    return _mib(n)


def estimate_rasterize(verts, tris, bmin, bmax, cs: float) -> tuple[StageEstimate, int, int]:
    """(estimate, columns, fragment bound) of marking and rasterizing on this grid.

    All fragments are held (packed) until the merge; on top, the triangle chunks being clipped
    (one, or two on the clipping threads: `core.rasterize.clip_plan`), on one thread the
    walked chunks of a group waiting for its kept-sets call, and the column ranges being
    merged hold their own state. The rasterizer's constants are read at
    call time, so a change there is picked up, but the bytes per item here were measured on
    its current span merge."""
    from . import rasterize

    width, height = grid_columns(bmin, bmax, cs)
    columns = width * height
    per_tri = fragment_bound(verts, tris, bmin, bmax, cs)
    per_tri = per_tri[per_tri > 0]
    fragments = int(per_tri.sum())
    n_tris = int(np.asarray(tris).shape[0])
    chunk, in_flight = rasterize.clip_plan(int(per_tri.shape[0]))
    clipping = waiting = 0
    if fragments:
        sums = np.sort(np.add.reduceat(per_tri, np.arange(0, per_tri.shape[0], chunk)))
        clipping = int(sums[-in_flight:].sum())
        if in_flight == 1:  # on one thread the chunks of a group wait for its last one
            waiting = int(sums[-rasterize.KEPT_SETS_GROUP_CHUNKS :].sum())
    merging = min(fragments, in_flight * max(rasterize.CHUNK_FRAGMENTS, n_tris))
    total = (
        RUNTIME_BYTES
        + STAGE_FIXED_BYTES
        + fragments * RASTER_BYTES_PER_FRAGMENT
        + clipping * RASTER_CLIP_BYTES_PER_FRAGMENT
        + waiting * RASTER_WALKED_BYTES_PER_FRAGMENT
        + merging * RASTER_MERGE_BYTES_PER_FRAGMENT
        + columns * RASTER_BYTES_PER_COLUMN
        + n_tris * RASTER_BYTES_PER_TRIANGLE
        + min(n_tris, in_flight * chunk) * RASTER_CHUNK_BYTES_PER_TRIANGLE
    )
    ext = np.asarray(bmax, dtype=np.float64) - np.asarray(bmin, dtype=np.float64)
    drivers = (
        f"{count(columns)} columns ({count(width)} x {count(height)} over "
        f"{ext[0]:,.6g} x {ext[1]:,.6g} m) and up to {count(fragments)} span fragments from "
        f"{n_tris:,} triangles (overlapping triangles each count)"
    )
    return StageEstimate("rasterize", total, drivers), columns, fragments


def estimate_bake(verts, tris, bmin, bmax, config: NavConfig, navmesh: bool = True):
    """Every stage's predicted peak before anything is rasterized: list of `StageEstimate`.

    Rasterization is bounded by the fragment bound. For the later stages the span count is not
    known yet: they are predicted with one walkable span per touched column (min(fragments,
    columns)), which the checks before those stages replace with the real counts.
    """
    from .detail import PATCH_BYTES_PER_CELL, PATCH_CELLS_PER_CHUNK, PATCH_WORKERS

    raster, columns, fragments = estimate_rasterize(verts, tris, bmin, bmax, config.cell_size)
    spans = min(fragments, columns)
    inputs = input_bytes(verts, tris)
    out = [raster, _filters(columns, spans, inputs)]
    if navmesh:
        out.append(_compact(columns, spans, spans, inputs))
        for name in OPEN_STAGE_BYTES_PER_SPAN:
            out.append(_open_stage(name, columns, spans, spans, inputs))
        # The chunks in flight hold up to their budgets (patches overlap, so polygons' cells
        # can add up to more than the grid), or one polygon alone, which never exceeds the
        # grid (then chunks run one at a time).
        patch = max(min(PATCH_WORKERS * PATCH_CELLS_PER_CHUNK, 2 * columns), columns)
        held = inputs + _held(columns, spans) + columns * OPEN_STAGE_BYTES_PER_COLUMN
        held += spans * DETAIL_HELD_BYTES_PER_SPAN
        total = RUNTIME_BYTES + STAGE_FIXED_BYTES + held + patch * PATCH_BYTES_PER_CELL
        out.append(StageEstimate("detail", total, "height patches"))
    grid = raster.drivers.split(" and up to ")[0]
    sparse = fragments * 100 < columns
    return [
        replace(e, sparse=sparse)
        if e is raster
        else replace(e, drivers=f"{grid}, predicted {count(spans)} walkable spans", sparse=sparse)
        for e in out
    ]


def input_bytes(verts, tris) -> int:
    """What a bake holds of its input from start to end: the validated copies of ``verts``
    and ``tris`` and the per-triangle areas. [Units: bytes]"""
    return int(np.asarray(verts).shape[0]) * 12 + int(np.asarray(tris).shape[0]) * 16


def _filters(columns: int, solid_spans: int, inputs: int = 0) -> StageEstimate:
    from .filters import LEDGE_BLOCK, WORKERS

    # The ledge filter's blocks in flight: at most WORKERS blocks, none beyond the spans.
    in_flight = min(solid_spans, WORKERS * LEDGE_BLOCK)
    total = (
        RUNTIME_BYTES
        + STAGE_FIXED_BYTES
        + inputs
        + columns * FILTER_BYTES_PER_COLUMN
        + solid_spans * FILTER_BYTES_PER_SOLID_SPAN
        + in_flight * FILTER_BYTES_PER_BLOCK_SPAN
    )
    return StageEstimate("filters", total, f"{columns:,} columns, {solid_spans:,} solid spans")


def estimate_filters(hf, inputs: int = 0) -> StageEstimate:
    """The span filters' peak on the solid heightfield ``hf``; ``inputs``: `input_bytes`."""
    return _filters(int(hf.width) * int(hf.height), int(hf.span_count), inputs)


def _held(columns: int, solid_spans: int) -> int:
    return columns * HELD_BYTES_PER_COLUMN + solid_spans * HELD_BYTES_PER_SOLID_SPAN


def _compact(columns: int, solid_spans: int, open_spans: int, inputs: int = 0) -> StageEstimate:
    from .compact import LINK_CHUNK_SPANS, LINK_WORKERS

    in_flight = min(open_spans, LINK_WORKERS * LINK_CHUNK_SPANS)
    total = (
        RUNTIME_BYTES
        + STAGE_FIXED_BYTES
        + inputs
        + _held(columns, solid_spans)
        + columns * COMPACT_BYTES_PER_COLUMN
        + open_spans * COMPACT_BYTES_PER_SPAN
        + 4 * in_flight * COMPACT_BYTES_PER_CHUNK_LINK
    )
    return StageEstimate("compact", total, f"{columns:,} columns, {open_spans:,} walkable spans")


def estimate_compact(hf, inputs: int = 0) -> StageEstimate:
    """The compact stage's peak on the solid heightfield ``hf``: its walkable spans, and the
    link chunks in flight."""
    spans = int(np.count_nonzero(np.asarray(hf.area) != 0))
    return _compact(int(hf.width) * int(hf.height), int(hf.span_count), spans, inputs)


def _open_stage(
    name: str, columns: int, solid_spans: int, open_spans: int, inputs: int = 0
) -> StageEstimate:
    total = (
        RUNTIME_BYTES
        + STAGE_FIXED_BYTES
        + inputs
        + _held(columns, solid_spans)
        + columns * OPEN_STAGE_BYTES_PER_COLUMN
        + open_spans * OPEN_STAGE_BYTES_PER_SPAN[name]
    )
    return StageEstimate(name, total, f"{columns:,} columns, {open_spans:,} walkable spans")


def column_pairs(chf) -> int:
    """Pairs of spans sharing a column of the compact heightfield (sum of c (c - 1) / 2 over
    its columns of c spans): what the merge of regions holds, growing with the square of the
    floors stacked in a column."""
    counts: np.ndarray = np.diff(np.asarray(chf.cell_start, dtype=np.int64)).astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def estimate_open_stage(name: str, chf, solid_spans: int, inputs: int = 0) -> StageEstimate:
    """Peak of ``name`` (erode, distance, regions or contours) on the compact heightfield,
    with the pairs of spans sharing a column (`column_pairs`) from regions on."""
    columns = int(chf.width) * int(chf.height)
    estimate = _open_stage(name, columns, solid_spans, int(chf.span_count), inputs)
    if name in ("erode", "distance"):
        return estimate
    pairs = column_pairs(chf)
    per_pair = REGIONS_BYTES_PER_COLUMN_PAIR if name == "regions" else HELD_BYTES_PER_COLUMN_PAIR
    return StageEstimate(
        name, estimate.bytes + pairs * per_pair, f"{estimate.drivers}, {pairs:,} column pairs"
    )


def estimate_polymesh(contours, chf, solid_spans: int, inputs: int = 0) -> StageEstimate:
    """Polygon mesh peak: what the contour stage holds plus per contour vertex."""
    base = estimate_open_stage("contours", chf, solid_spans, inputs)
    nverts = int(np.shape(contours.verts)[0])
    total = base.bytes + nverts * POLYMESH_BYTES_PER_CONTOUR_VERTEX
    return StageEstimate("polymesh", total, f"{nverts:,} contour vertices")


def estimate_detail(pmesh, chf, solid_spans: int, inputs: int = 0) -> StageEstimate:
    """Detail stage peak: held arrays plus the largest chunk of height patches (polygons'
    bounding boxes plus one cell, `detail.patch_chunks`) and per-polygon sample state."""
    from .detail import PATCH_BYTES_PER_CELL, patch_chunks

    cells = polygon_patch_cells(pmesh, int(chf.width), int(chf.height))
    chunk = max((int(cells[lo:hi].sum()) for lo, hi in patch_chunks(cells)), default=0)
    columns = int(chf.width) * int(chf.height)
    npolys = int(cells.shape[0])
    total = (
        RUNTIME_BYTES
        + STAGE_FIXED_BYTES
        + inputs
        + _held(columns, solid_spans)
        + columns * OPEN_STAGE_BYTES_PER_COLUMN
        + int(chf.span_count) * DETAIL_HELD_BYTES_PER_SPAN
        + column_pairs(chf) * HELD_BYTES_PER_COLUMN_PAIR
        + chunk * PATCH_BYTES_PER_CELL
        + npolys * DETAIL_BYTES_PER_POLYGON
    )
    drivers = (
        f"{npolys:,} polygons whose bounding boxes cover {int(cells.sum()):,} cells "
        f"(largest chunk built at once: {chunk:,} cells)"
    )
    return StageEstimate("detail", total, drivers)


#: Automatic links: per probe point of the chunk probed at once (`jumplinks.CHUNK_PROBES` at
#: most), per sample (its floor, landing and arc kept while it may become a link), and
#: fixed. Traced on dungeon (2026-11-27): 24.8k probes 7.3 MiB, 1.54 M probes (11.6k
#: samples) 74 MiB, 3.85 M probes (58k samples) 153 MiB; 400 boxes at link_spacing 0.01
#: and max_jump_distance 100 (108k samples, 51 M probes, 23k links) 310 MiB, in a 256 MiB
#: bake that peaked at 421 MiB unchecked. [Units: bytes]
LINKS_BYTES_PER_CHUNK_PROBE = 160
LINKS_BYTES_PER_SAMPLE = 1400
LINKS_FIXED_BYTES = 8 << 20


def estimate_links(
    samples: int, probes: int, chf, solid_spans: int, inputs: int = 0
) -> StageEstimate:
    """The automatic links stage's peak: what the bake holds (as for contours) plus the probe
    chunk and the samples (`jumplinks.link_work`)."""
    from .jumplinks import CHUNK_PROBES

    base = estimate_open_stage("contours", chf, solid_spans, inputs)
    total = (
        base.bytes
        + LINKS_FIXED_BYTES
        + min(int(probes), CHUNK_PROBES) * LINKS_BYTES_PER_CHUNK_PROBE
        + int(samples) * LINKS_BYTES_PER_SAMPLE
    )
    return StageEstimate(
        "links",
        total,
        f"{samples:,} link samples and {probes:,} probe points (link_spacing, max_jump_distance)",
    )


def polygon_patch_cells(pmesh, width: int, height: int) -> np.ndarray:
    """int64 (npolys,): cells of each polygon's height patch (bounding box plus one cell,
    clipped to the grid), as `detail.build_poly_mesh_detail` builds them."""
    nvp = int(pmesh.nvp)
    polys = np.asarray(pmesh.polys)[:, :nvp].astype(np.int64)
    verts = np.asarray(pmesh.verts, dtype=np.int64)
    if polys.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    used = polys != 0xFFFF
    safe = np.where(used, polys, 0)
    x = verts[safe, 0]
    y = verts[safe, 2]
    big = np.iinfo(np.int64).max
    xmin = np.maximum(0, np.where(used, x, big).min(axis=1) - 1)
    xmax = np.minimum(width, np.where(used, x, -1).max(axis=1) + 1)
    ymin = np.maximum(0, np.where(used, y, big).min(axis=1) - 1)
    ymax = np.minimum(height, np.where(used, y, -1).max(axis=1) + 1)
    return np.maximum(xmax - xmin, 1) * np.maximum(ymax - ymin, 1)


def fitting_cell_size(estimate_at, cell_size: float, limit: int) -> float | None:
    """The smallest cell size (two significant digits, at least ``cell_size``) whose
    ``estimate_at(cs)`` fits ``limit``, trying growing sizes from the quadratic guess; None if
    none does (the limit is below what any grid needs)."""
    first = estimate_at(cell_size)
    candidate = round_up(cell_size * max(1.01, (first / limit) ** 0.5 if first > 0 else 1.0))
    for _ in range(40):
        if estimate_at(candidate) <= limit:
            return candidate
        candidate = round_up(candidate * 1.15)
    return None


def check(
    estimate: StageEstimate,
    config: NavConfig,
    cell_size_hint: float | None = None,
    record: dict[str, int] | None = None,
    advice: str | None = None,
) -> None:
    """Refuse (`VoxNavError`) when ``estimate`` exceeds ``config.memory_limit``.

    ``cell_size_hint``: a cell size that fits (from `fitting_cell_size`), or None to derive one
    from the estimate's quadratic growth with 1 / cell_size. ``record``: stage name ->
    estimated bytes, updated with this estimate. ``advice``: what to change, for a stage that
    does not grow with the grid (the automatic links: their spacing and reach), instead of a
    cell size.
    """
    if record is not None:
        record[estimate.stage] = estimate.bytes
    limit = int(config.memory_limit)
    if estimate.bytes <= limit:
        return
    if cell_size_hint is None and limit > RUNTIME_BYTES and advice is None:
        growth = (estimate.bytes - RUNTIME_BYTES) / (limit - RUNTIME_BYTES)
        cell_size_hint = round_up(config.cell_size * growth**0.5 * 1.05)
    if advice is not None:
        fits = f"{advice}, or raise memory_limit"
    elif cell_size_hint is not None:
        fits = (
            f"use cell_size >= {cell_size_hint:g}, bake a smaller region with "
            "bounds_min/bounds_max, or raise memory_limit"
        )
    else:
        fits = f"raise memory_limit (the runtime alone needs about {_mib(RUNTIME_BYTES)})"
    raise VoxNavError(
        f"the bake would need about {_mib(estimate.bytes)} in the {estimate.stage} stage "
        f"(memory_limit is {_mib(limit)}), driven by {estimate.drivers} at cell_size "
        f"{config.cell_size:g}; {fits} (to at least {_mib(estimate.bytes * 1.05)} for these "
        "settings)"
        + (
            "; most of the grid is empty: check for stray vertices far from the rest"
            * estimate.sparse
        )
    )


def check_more(stage: str, extra: int, drivers: str, *, config: NavConfig, record: dict) -> None:
    """`check` stage ``stage`` once more, while it runs: its estimate in ``record`` (stage
    name -> bytes, as `check` fills it) plus ``extra`` bytes it has just learnt it needs,
    ``drivers`` saying what they are. Records the sum. [Units: bytes]"""
    base = int(record.get(stage, RUNTIME_BYTES))
    check(StageEstimate(stage, base + int(extra), drivers), config, record=record)


def check_bake(
    verts,
    tris,
    bmin,
    bmax,
    config: NavConfig,
    navmesh: bool = True,
    record: dict[str, int] | None = None,
) -> None:
    """Refuse a bake up front when any stage's predicted peak (`estimate_bake`) exceeds the
    limit, naming a cell size whose prediction fits. ``record`` as in `check` (predictions)."""
    estimates = estimate_bake(verts, tris, bmin, bmax, config, navmesh)
    if record is not None:
        record.update((e.stage, e.bytes) for e in estimates)
    worst = max(estimates, key=lambda e: e.bytes)
    if worst.bytes <= config.memory_limit:
        return

    def at(cs: float) -> int:
        trial = config.replace(cell_size=cs)
        return max(e.bytes for e in estimate_bake(verts, tris, bmin, bmax, trial, navmesh))

    check(worst, config, fitting_cell_size(at, config.cell_size, config.memory_limit))


def estimate_memory(verts, tris, bmin, bmax, cs: float) -> tuple[int, int, int]:
    """(columns, fragment bound, estimated rasterization peak bytes) on this grid."""
    raster, columns, fragments = estimate_rasterize(verts, tris, bmin, bmax, cs)
    return columns, fragments, raster.bytes
