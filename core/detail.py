"""Detail mesh: a height-accurate triangulation of every navmesh polygon (rcBuildPolyMeshDetail).

Input: a polygon mesh (any object with Recast's ``rcPolyMesh`` fields under VoxNav names, e.g.
``core.polymesh.PolyMesh``: ``verts`` uint16 (n, 3) as (x, height, grid-row) in cells,
``polys`` uint16 (npolys, 2*nvp) vertex ids then neighbour polys, 0xFFFF = none, ``regs``,
``nvp``, ``bmin`` float32 (3,) Z-up, ``cs``, ``ch``, ``border_size``, ``max_edge_error``) and
the compact heightfield it was built from (with ``reg``).

Output: `PolyMeshDetail`, Recast's ``rcPolyMeshDetail``: per polygon a sub-mesh whose first
vertices are the polygon's own vertices, followed by points sampled along its edges and inside
it, triangulated.

The rule, per polygon (Recast's ``buildPolyDetail``):

1. **Height patch.** Over the polygon's cell bounds plus one cell, take the floor of the first
   span of the polygon's region in every column, then flood the rest of the patch breadth-first
   from region spans that touch another region (or, when the polygon has no span of its region,
   from the span nearest a polygon vertex walked to the polygon centre). Breadth-first order
   decides which layer a column gets where layers overlap.
2. **Edges.** Each edge is sampled every ``sample_dist`` from its lexicographically smaller end
   (so the two polygons sharing it agree), heights read from the patch, and simplified
   Douglas-Peucker style until no sample is more than ``sample_max_error`` off (3D distance).
3. **Hull.** The polygon plus kept edge points are triangulated ear by ear, shortest perimeter
   first.
4. **Interior.** Unless the polygon is thinner than ``2 * sample_dist``, grid points at least
   ``sample_dist / 2`` inside it are sampled (jittered by up to 0.1 cell), and the sample with
   the largest height error is inserted, followed by a full Delaunay re-triangulation, until
   every error is within ``sample_max_error``.

Arithmetic is float32 in Recast's operation order, so the output matches Recast bit for bit.
Only the patch cells the samples read are worked out (`_LocalHeights`: a cell's floor, or
the flood replayed in a window of a few cells around it, claims in Recast's queue order);
a polygon with a sample beyond that gets its whole patch (`_height_patches`: one
level-by-level breadth-first flood for all such polygons at once, also the oracle).
Vectorized over all polygons at once: those height reads, edge sampling and
simplification, minimum extents, the interior
sample grids and the hull ear walks. The greedy insertion of interior samples runs in rounds
over the polygons that add some: each round measures every such polygon's samples against its
triangles at once, and re-triangulates each (Recast's delaunayHull, sequential per polygon;
for polygons of up to `FOLD_TABLE_MAX_POINTS` points its candidate scans come from tables
built for all of them at once, `_fold_tables`). Large polygons and the last few finish one
by one. With a build context's ``executor`` (processes), those polygons are sent to it in
pieces when the work is large (`POOL_MIN_WORK`).

Deviation from Recast: with ``sample_dist == 0`` Recast's hull stays empty and the hull
triangulation never ends (recastnavigation issue #650); here the hull is then the polygon's own
vertices, which is what the setting asks for (no extra samples).
"""

from __future__ import annotations

import functools
import gc
import math
import os
import struct
import time
from bisect import bisect_left
from dataclasses import dataclass
from itertools import islice
from typing import NamedTuple

import numpy as np

from . import threads
from .compact import DIR_OFFSET_X, DIR_OFFSET_Y
from .context import BuildContext
from .errors import VoxNavError

F32 = np.float32
#: Height of a patch cell that has no sample. [Recast: RC_UNSET_HEIGHT]
UNSET_HEIGHT = 0xFFFF
#: Index meaning "no vertex" / "no neighbour" in polygon rows. [Recast: RC_MESH_NULL_IDX]
MESH_NULL_IDX = 0xFFFF
#: Region id of polygons merged from several regions. [Recast: RC_MULTIPLE_REGS]
MULTIPLE_REGS = 0
#: Most vertices one polygon's detail mesh may have.
MAX_VERTS = 127
#: Most triangles one polygon's detail mesh may have.
MAX_TRIS = 255
#: Most samples along one polygon edge.
MAX_VERTS_PER_EDGE = 32
#: Triangulate the hulls of the polygons without interior samples all at once
#: (`_simple_details`); False sends them through the one-polygon path (the tests' oracle).
BATCH_HULLS = True
#: Polygons adding interior samples do so in rounds, each round's height gaps measured for all
#: of them at once (False: one polygon after the other, `_build_poly_detail`, the oracle).
BATCH_INSERTS = True
#: A polygon adding interior samples one by one measures each triangle's height gaps to its
#: samples once (`_TriangleGaps`): a Delaunay step replaces a few triangles and keeps the rest
#: (False: every triangle again at every step, `_dist_to_tri_mesh`, the oracle).
CACHE_GAPS = True
#: A polygon's Delaunay after one more point resumes the walk of its previous call where the
#: new point first changes a step (`_resumed_walk`); False: every call walks from the hull.
RESUME_WALKS = True
#: The polygons `_details_with_samples` finishes outside its rounds grow in lockstep, their new
#: triangles' gap rows computed together (`_grow_poly_details`); False: one polygon after
#: the other (`_grow_poly_detail`, the tests' oracle for it).
LOCKSTEP_FINISH = True
#: Most samples of a polygon growing in lockstep; larger ones finish alone, after them: each
#: step's Delaunay call reads the polygon's caches, which grow with its points, and a round
#: of many large polygons moves them all through the CPU's caches (undulating's detail with
#: every polygon in lockstep: +1 to +3 %; with those of up to 64 samples: -1 %, nav_test's -5 %).
LOCKSTEP_MAX_SAMPLES = 64
#: Fewest steps of the previous walk for which resuming it pays (keeping a walk costs more
#: than resuming short ones saves; measured on the shared meshes).
RESUME_MIN_STEPS = 16
#: Sample heights are read from the few patch cells around each sample (`_LocalHeights`:
#: Recast's flood replayed in a small window) instead of whole height patches; False: every
#: polygon's whole patch is built (`_height_patches`, the oracle, and the fallback).
LOCAL_HEIGHTS = True
#: Flood levels `_LocalHeights` replays around a sample's cell before it builds that polygon's
#: whole patch (samples lie on or near their polygon, so their cells are reached within two
#: levels on every shared mesh: the rest is a rare fallback, not a different result).
LOCAL_FLOOD_LEVELS = 2
#: Patch cells of a chunk below which its whole patches are built all the same: there the
#: flood costs less than the local reads' fixed NumPy calls (the detail stage with whole
#: patches against local reads, in one process: house's 3.5k patch cells and bridge's 1.6k
#: 0.94x, dungeon's 37k about 1.15x). [Units: cells]
LOCAL_MIN_CELLS = 8192
#: Polygons leaving `_details_with_samples`' rounds keep their last scan tables as settled
#: scans (`_seed_settled_scans`); False: their first Delaunay alone scans every pair.
SEED_SETTLED_SCANS = True
#: Edge flag of a detail triangle edge that lies on the polygon outline. [Detour]
DETAIL_EDGE_BOUNDARY = 0x1
#: Patch cells of the polygons whose height patches are built at once; with `PATCH_WORKERS`
#: chunks in flight, bounds the detail stage's working memory (about `PATCH_BYTES_PER_CELL`
#: each). [Units: cells]
PATCH_CELLS_PER_CHUNK = 1 << 18
#: Threads building patch chunks at once.
PATCH_WORKERS = min(2, os.cpu_count() or 1)
#: Threads sampling chunks at once with `LOCAL_HEIGHTS`: one, as that work is many small NumPy
#: calls holding the GIL (detail stage, one thread against two in one process: 4x4 tiling
#: 41.8 against 43.1 ms, 10x10 252 against 268 ms).
LOCAL_WORKERS = 1
#: Working bytes per patch cell while patches are built and sampled (measured with
#: tracemalloc, rounded up). [Units: bytes]
PATCH_BYTES_PER_CELL = 96
#: (sample, hull triangle) pairs `_adds_no_sample` tests at once: some 200 bytes each, so a
#: block holds about 50 MiB however many samples fine sampling makes. [Units: pairs]
NO_SAMPLE_PAIR_BLOCK = 1 << 18

_EV_UNDEF = -1
_EV_HULL = -2
_FLT_MAX = float(np.finfo(np.float32).max)
#: distToTriMesh's barycentric slack and FLT_MAX as float32 scalars (made once, not per call).
_F32_EPS_INSIDE = F32(1e-4)
_F32_FLT_MAX = F32(_FLT_MAX)
_PACK = struct.Struct("f")


def _r(x: float) -> float:
    """Round a Python float to float32 (exact emulation of one float32 operation's result)."""
    return _PACK.unpack(_PACK.pack(x))[0]


@dataclass
class PolyMeshDetail:
    """Recast's rcPolyMeshDetail in VoxNav's frame.

    Sub-mesh ``i`` (polygon ``i``) uses ``verts[meshes[i,0] : meshes[i,0] + meshes[i,1]]`` and
    ``tris[meshes[i,2] : meshes[i,2] + meshes[i,3]]``; triangle vertex ids are local to the
    sub-mesh, and its first vertices are the polygon's own vertices in polygon order.
    """

    #: uint32 (npolys, 4): vertex base, vertex count, triangle base, triangle count.
    meshes: np.ndarray
    #: float32 (nverts, 3) world Z-up. [Units: wu]
    verts: np.ndarray
    #: uint8 (ntris, 4): local vertex ids a, b, c, then edge flags (bits 0, 2, 4 for edges ab,
    #: bc, ca: DETAIL_EDGE_BOUNDARY when the edge lies on the polygon outline).
    tris: np.ndarray

    @property
    def nmeshes(self) -> int:
        return int(self.meshes.shape[0])

    @property
    def nverts(self) -> int:
        return int(self.verts.shape[0])

    @property
    def ntris(self) -> int:
        return int(self.tris.shape[0])

    def to_reference_arrays(self) -> dict[str, np.ndarray | np.generic]:
        """The ``dmesh_*`` and ``count_detail_*`` arrays of the parity dump (Recast's Y-up
        frame: VoxNav (x, y, z) -> Recast (x, z, y))."""
        return {
            "dmesh_nmeshes": np.int64(self.nmeshes),
            "dmesh_nverts": np.int64(self.nverts),
            "dmesh_ntris": np.int64(self.ntris),
            "dmesh_meshes": self.meshes.astype(np.uint32),
            "dmesh_verts": self.verts[:, [0, 2, 1]].astype(np.float32),
            "dmesh_tris": self.tris.astype(np.uint8),
            "count_detail_meshes": np.int64(self.nmeshes),
            "count_detail_verts": np.int64(self.nverts),
            "count_detail_tris": np.int64(self.ntris),
        }


# ----------------------------------------------------------------------------------------------
# Height patches
# ----------------------------------------------------------------------------------------------


def _seed_poly_center(chf, pverts, xmin, ymin, w, h, bs):
    """Recast's seedArrayWithPolyCenter: (x, y, span) chf cell near the polygon centre, or None.

    ``pverts`` int (npoly, 3) polygon vertices in cells. Sequential depth-first walk; only used
    for the rare polygon with no span of its own region under it.
    """
    width = chf.width
    cell_start = chf.cell_start
    ys = chf.y
    nbr = chf.neighbor
    offsets = ((0, 0), (-1, -1), (0, -1), (1, -1), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0))
    start_x = start_y = 0
    start_i = -1
    dmin = UNSET_HEIGHT
    for vx, vy, vz in pverts.tolist():
        if dmin <= 0:
            break
        for ox, oz in offsets:
            if dmin <= 0:
                break
            ax, az = vx + ox, vz + oz
            if ax < xmin or ax >= xmin + w or az < ymin or az >= ymin + h:
                continue
            col = (ax + bs) + (az + bs) * width
            for i in range(int(cell_start[col]), int(cell_start[col + 1])):
                if dmin <= 0:
                    break
                d = abs(vy - int(ys[i]))
                if d < dmin:
                    start_x, start_y, start_i, dmin = ax, az, i, d
    if start_i < 0:
        return None
    npoly = pverts.shape[0]
    pcx = int(pverts[:, 0].sum()) // npoly
    pcy = int(pverts[:, 2].sum()) // npoly
    visited = np.zeros((h, w), dtype=bool)
    stack = [(start_x, start_y, start_i)]
    dirs = [0, 1, 2, 3]
    cx = cy = ci = -1
    while True:
        if not stack:
            break  # Recast warns "walk towards polygon center failed" and keeps the last cell.
        cx, cy, ci = stack.pop()
        if cx == pcx and cy == pcy:
            break
        if cx == pcx:
            direct = 1 if pcy > cy else 3
        else:
            direct = 2 if pcx > cx else 0
        dirs[direct], dirs[3] = dirs[3], dirs[direct]
        for d in dirs:
            ni = int(nbr[ci, d])
            if ni < 0:
                continue
            nx = cx + int(DIR_OFFSET_X[d])
            ny = cy + int(DIR_OFFSET_Y[d])
            hx, hy = nx - xmin, ny - ymin
            if hx < 0 or hx >= w or hy < 0 or hy >= h:
                continue
            if visited[hy, hx]:
                continue
            visited[hy, hx] = True
            stack.append((nx, ny, ni))
        dirs[direct], dirs[3] = dirs[3], dirs[direct]
    return cx + bs, cy + bs, ci


def _region_spans(chf_reg, cell_start, col, reg, layer_at=None) -> np.ndarray:
    """The first span, bottom up, of each column ``col`` (int64 (m,) chf cell ids) whose
    region is ``reg`` (int64 (m,)), as Recast's getHeightData looks for the polygon's region:
    int64 (m,) ids into ``chf_reg``, -1 where the column has none (or reg is MULTIPLE_REGS).
    ``layer_at`` (m,): where each lookup's region field starts in ``chf_reg`` (several
    agents' fields joined, `build_poly_mesh_details`); None: chf_reg is chf's own.
    """
    start = cell_start.take(col)
    count = cell_start[1:].take(col)
    count -= start
    if layer_at is not None:
        start += layer_at
    # Layer after layer: the bottom layer of every column at once, then only the taller
    # columns still looking. (An empty column's start may be n: clipped, masked by its count.)
    looking = reg != MULTIPLE_REGS
    looking &= count > 0
    if chf_reg.shape[0]:
        hit = chf_reg.take(start, mode="clip") == reg
        hit &= looking
    else:
        hit = np.zeros(col.shape[0], dtype=bool)
    found = np.where(hit, start, -1)
    looking &= ~hit
    looking &= count > 1
    cand = np.flatnonzero(looking)
    del hit, looking
    k = 1
    while cand.size:
        idx = start.take(cand) + k
        hit = chf_reg.take(idx) == reg.take(cand)
        found[cand[hit]] = idx[hit]
        k += 1
        cand = cand[~hit & (count.take(cand) > k)]
    return found


def _seed_flags(chf_reg, neighbor, span, layer_at=None) -> np.ndarray:
    """bool (m,): spans ``span`` (int64 ids into ``chf_reg``, shifted by ``layer_at`` as in
    `_region_spans`) with a connected neighbour in another region: Recast's flood seeds."""
    own = chf_reg.take(span)
    at = span if layer_at is None else span - layer_at
    at4 = at * 4
    links = neighbor.reshape(-1)  # (n, 4) row-major: a view, where a column's take copies
    out = np.zeros(span.shape[0], dtype=bool)
    for d in range(4):
        link = links.take(at4 + d)
        there = link if layer_at is None else link + layer_at
        # A missing link (-1) reads some span's region; the mask drops it.
        out |= (link >= 0) & (chf_reg.take(there, mode="clip") != own)
    return out


def _height_patches(
    chf, verts, poly_idx, npoly, regions, xmin, ymin, pw, ph, bs, reg_field=None, layer=None
):
    """The height patches of the given polygons (Recast's getHeightData), flooded together.

    Returns (data uint16 (sum w*h,), offsets int64 (npolys+1,)): patch of polygon p is
    ``data[off[p]:off[p+1]].reshape(ph[p], pw[p])``, UNSET_HEIGHT where nothing was reached.
    The breadth-first flood runs level by level over all polygons at once; within a level the
    first claim of a cell in Recast's FIFO order (queue position, then direction) wins, which is
    exactly Recast's sequential queue. Each patch depends on its own polygon only, so any subset
    of polygons gives the same patches. ``reg_field``: the region field the polygons read
    (several meshes' joined, `build_poly_mesh_details`; chf.reg when None); ``layer``: per
    polygon, where its mesh's regions start in it (None: the field is chf's own). The seed
    flags (`_seed_flags`) are found for the spans of the polygons' regions only.
    Working memory about `PATCH_BYTES_PER_CELL` per patch cell. [Units: cells]
    """
    chf_reg = np.ascontiguousarray(chf.reg if reg_field is None else reg_field)
    npolys = regions.shape[0]
    width = chf.width
    size = pw * ph
    off = np.zeros(npolys + 1, dtype=np.int64)
    np.cumsum(size, out=off[1:])
    total = int(off[-1])
    data = np.full(total, UNSET_HEIGHT, dtype=np.uint16)
    # Patch cell k of a patch row starting at column c0 and at patch index r0 is grid column
    # k + (c0 - r0): one repeat per row instead of a division per cell.
    row_poly = np.repeat(np.arange(npolys, dtype=np.int64), ph)
    row_first = np.zeros(npolys, dtype=np.int64)
    np.cumsum(ph[:-1], out=row_first[1:])
    row_y = np.arange(row_poly.size, dtype=np.int64) - row_first[row_poly]
    row_len = pw[row_poly]
    row_start = off[row_poly] + row_y * row_len
    row_col = (xmin[row_poly] + bs) + (ymin[row_poly] + bs + row_y) * width
    col = np.repeat(row_col - row_start, row_len)
    col += np.arange(total, dtype=np.int64)
    reg_p = np.repeat(regions[row_poly], row_len)
    del row_y, row_start, row_col
    layer_at = None
    if layer is not None:
        # Span ids into the joined region fields while looking for the polygon's region.
        layer_at = np.repeat(layer[row_poly], row_len)
    found = _region_spans(chf_reg, chf.cell_start, col, reg_p, layer_at)
    del col, reg_p
    has = np.flatnonzero(found >= 0)
    span = found.take(has)
    # A span is a seed when a connected neighbour lies in another region (its region is the
    # polygon's, so this is a property of the span alone).
    seed_at = _seed_flags(
        chf_reg, chf.neighbor, span, None if layer_at is None else layer_at.take(has)
    )
    if layer_at is not None:
        span -= layer_at.take(has)
        del layer_at
    data[has] = chf.y.take(span)
    nonempty = np.zeros(npolys, dtype=bool)
    if has.size:
        # Patches are laid out in polygon order, so a polygon has a span of its region when
        # some hit lies in its range.
        nonempty = np.searchsorted(has, off[1:]) > np.searchsorted(has, off[:-1])
    f_g = has[seed_at]
    f_i = span[seed_at]
    del found, has, span, seed_at
    # Polygons with no span of their region: one seed near the centre (rare, sequential).
    extra = []
    for p in np.flatnonzero(~nonempty).tolist():
        pv = verts[poly_idx[p, : npoly[p]]].astype(np.int64)
        seed = _seed_poly_center(chf, pv, int(xmin[p]), int(ymin[p]), int(pw[p]), int(ph[p]), bs)
        if seed is None:
            continue
        sx, sy, si = seed
        g = off[p] + (sx - bs - xmin[p]) + (sy - bs - ymin[p]) * pw[p]
        data[g] = chf.y[si]
        extra.append((g, si))
    if extra:
        ex = np.array(extra, dtype=np.int64)
        order = np.argsort(np.concatenate([f_g, ex[:, 0]]), kind="stable")
        f_g = np.concatenate([f_g, ex[:, 0]])[order]
        f_i = np.concatenate([f_i, ex[:, 1]])[order]
    # The frontier as patch cells: polygon (from the offsets), patch x/y and the span.
    f_p = np.searchsorted(off, f_g, side="right") - 1
    local = f_g - off[f_p]
    f_w = pw.take(f_p)
    f_x = local % f_w
    f_y = local // f_w
    del local
    claim = np.empty(total, dtype=np.int64)  # scratch: first claimant per patch cell
    dxs = DIR_OFFSET_X.astype(np.int64)
    dys = DIR_OFFSET_Y.astype(np.int64)
    links = chf.neighbor.ravel()
    while f_i.size:
        # (cell, direction) pairs: inside the patch, onto an unset cell, along a link; the
        # cheap tests first so the link table is read for the few pairs that pass them.
        f_h = ph.take(f_p)
        inside = np.empty((f_i.size, 4), dtype=bool)
        for d in range(4):
            lim = f_x if dxs[d] < 0 else f_w - 1 - f_x if dxs[d] > 0 else None
            if lim is None:
                lim = f_y if dys[d] < 0 else f_h - 1 - f_y
            inside[:, d] = lim > 0
        sel = inside.ravel().nonzero()[0]
        # Each pair's neighbour cell (dx + dy * width cells on in its patch), then for those
        # still unset its link slot: gathers over the pairs left, index arrays throughout.
        row, d = sel >> 2, sel & 3
        g = f_g.take(row) + (dxs.take(d) + dys.take(d) * f_w.take(row))
        keep = (data.take(g) == UNSET_HEIGHT).nonzero()[0]
        sel, g = sel.take(keep), g.take(keep)
        ni = links.take(f_i.take(sel >> 2) * 4 + (sel & 3))
        linked = (ni >= 0).nonzero()[0]
        sel, g, ni = sel.take(linked), g.take(linked), ni.take(linked)
        if not g.size:
            break
        # The first claim of each cell in FIFO order (queue position, then direction): the
        # claims written last to first, so the first one's position is what stays.
        order = np.arange(g.size)
        claim[g[::-1]] = order[::-1]
        first = np.flatnonzero(claim.take(g) == order)
        sel, g = sel.take(first), g.take(first)
        ni = ni.take(first).astype(np.int64)
        data[g] = chf.y.take(ni)
        row = sel >> 2
        d = sel & 3
        f_p = f_p.take(row)
        f_w = f_w.take(row)
        f_x = f_x.take(row) + dxs.take(d)
        f_y = f_y.take(row) + dys.take(d)
        f_g = g
        f_i = ni
    return data, off


#: Most (point, spiral cell) pairs one pass of getHeight's spiral walk gathers: a large
#: max_edge_error makes the spiral wide (the panel takes up to 100000: 2000 took 2.8 GB).
SPIRAL_PAIRS_PER_PASS = 1 << 21


def _spiral_radius(radius: int, w, h) -> int:
    """getHeight's spiral radius as far as it can matter: a ring as wide as the largest patch
    (``w``, ``h`` int (n,) patch sizes [Units: cells]) lies outside every patch, since the
    walk starts from a cell clamped into its patch; the rings beyond change nothing."""
    reach = max(int(np.max(w, initial=0)), int(np.max(h, initial=0)))
    return max(1, min(int(radius), reach))


def _row_blocks(n_rows: int, width: int) -> list[slice]:
    """Slices of ``n_rows`` rows, each block at most `SPIRAL_PAIRS_PER_PASS` rows x width."""
    step = max(1, SPIRAL_PAIRS_PER_PASS // max(width, 1))
    return [slice(lo, lo + step) for lo in range(0, n_rows, step)]


def _spiral(radius: int):
    """Recast getHeight's spiral search order: offsets (m, 2) and ring number (m,)."""
    x, z, dx, dz = 1, 0, 1, 0
    max_size = radius * 2 + 1
    out = []
    for _ in range(max_size * max_size - 1):
        out.append((x, z))
        if x == z or (x < 0 and x == -z) or (x > 0 and x == 1 - z):
            dx, dz = -dz, dx
        x += dx
        z += dz
    off = np.array(out, dtype=np.int64).reshape(-1, 2)
    ring = np.maximum(np.abs(off[:, 0]), np.abs(off[:, 1]))
    return off, ring


def _patch_cell(fx, fz, ics, xmin, ymin, w, h):
    """getHeight's patch cell of points fx, fz (float32 (n,), local frame [wu]) in patches
    at xmin, ymin of w x h cells (int64 (n,) each): (ix, iz) int64, clamped into the patch,
    Recast's ``floor(f * ics + 0.01)`` in float32."""
    ix = np.floor(fx * ics + F32(0.01)).astype(np.int64)
    iz = np.floor(fz * ics + F32(0.01)).astype(np.int64)
    ix = np.minimum(np.maximum(ix - xmin, 0), w - 1)
    iz = np.minimum(np.maximum(iz - ymin, 0), h - 1)
    return ix, iz


class _Patches:
    """All polygons' height patches plus what Recast's getHeight needs."""

    def __init__(self, data, off, xmin, ymin, w, h, ics, ch, radius):
        self.data, self.off = data, np.asarray(off, dtype=np.int64)
        self.xmin = np.asarray(xmin, dtype=np.int64)
        self.ymin = np.asarray(ymin, dtype=np.int64)
        self.w = np.asarray(w, dtype=np.int64)
        self.h = np.asarray(h, dtype=np.int64)
        self.ics, self.ch = F32(ics), F32(ch)
        self.spiral, self.ring = _spiral(_spiral_radius(radius, self.w, self.h))
        self.nring = int(self.ring.max()) if self.ring.size else 0

    def height(self, pid, fx, fy, fz):
        """Recast getHeight for float32 arrays (n,) of points of polygons ``pid`` (n,), in
        the mesh's local frame: uint16 heights (n,) [Units: ch], UNSET_HEIGHT if none near."""
        w, h = self.w[pid], self.h[pid]
        ix, iz = _patch_cell(fx, fz, self.ics, self.xmin[pid], self.ymin[pid], w, h)
        base = self.off[pid]
        hgt = self.data[base + ix + iz * w]
        unset = np.flatnonzero(hgt == UNSET_HEIGHT)
        for block in _row_blocks(unset.size, self.spiral.shape[0]) if self.nring else ():
            # The spiral walk, all cells at once: the best height of the first ring with any.
            bad = unset[block]
            wb, hb = w[bad, None], h[bad, None]
            nx = ix[bad, None] + self.spiral[None, :, 0]
            nz = iz[bad, None] + self.spiral[None, :, 1]
            inside = (nx >= 0) & (nz >= 0) & (nx < wb) & (nz < hb)
            nh = np.full(nx.shape, UNSET_HEIGHT, dtype=np.uint16)
            nh[inside] = self.data[(base[bad, None] + nx + nz * wb)[inside]]
            hgt[bad] = _spiral_pick(nh, fy[bad], self.ring, self.nring, self.ch)
        return hgt


def _spiral_pick(nh, fy, ring, nring: int, ch) -> np.ndarray:
    """The end of Recast getHeight's spiral walk: ``nh`` uint16 (m, K) the heights of the
    cells around m points in spiral order (UNSET_HEIGHT: none or outside), ``ring`` (K,) each
    cell's ring; per point the height nearest ``fy`` [wu] in the first ring holding any (the
    first of equals in spiral order), UNSET_HEIGHT if none. [Units: ch]"""
    d = np.abs(nh.astype(F32) * ch - fy[:, None])
    d = np.where(nh != UNSET_HEIGHT, d, np.inf)
    result = np.full(nh.shape[0], UNSET_HEIGHT, dtype=np.uint16)
    todo = np.ones(nh.shape[0], dtype=bool)
    rows = np.arange(nh.shape[0])
    for r in range(1, nring + 1):
        cols = np.flatnonzero(ring == r)
        dr = d[:, cols]
        best = np.argmin(dr, axis=1)
        hit = todo & np.isfinite(dr[rows, best])
        result[hit] = nh[rows[hit], cols[best[hit]]]
        todo &= ~hit
    return result


@functools.cache
def _diamond(radius: int):
    """Cells within ``radius`` steps of a centre: offsets (K, 2) (x, z), centre first, and for
    each cell the cell one step on in each direction (K, 4), K where outside."""
    offs = [(0, 0)] + [
        (x, z)
        for z in range(-radius, radius + 1)
        for x in range(-radius, radius + 1)
        if 0 < abs(x) + abs(z) <= radius
    ]
    at = {o: k for k, o in enumerate(offs)}
    step = [
        [at.get((x + int(DIR_OFFSET_X[d]), z + int(DIR_OFFSET_Y[d])), len(offs)) for d in range(4)]
        for x, z in offs
    ]
    return np.array(offs, dtype=np.int64), np.array(step, dtype=np.int64)


class _LocalHeights:
    """Recast's getHeight on polygons' height patches, reading only the cells around each
    sample: same results as `_Patches` over `_height_patches`, without building the patches.

    A patch cell holds the height of the first span of the polygon's region in its column
    (flood level 0); the other cells get theirs from Recast's breadth-first flood out of the
    region's border spans, each cell from the first claim in queue order. A cell's claim at
    level L depends only on the cells within L steps of it, and its queue order is its
    claimer's followed by the direction (a seed's is its row-major place in the patch), so
    the flood replayed in that small window gives the cell exactly. Samples lie on or near
    their polygon: their cells are reached within `LOCAL_FLOOD_LEVELS` levels, or lie over an
    empty column (unset: getHeight's spiral walk then reads the cells around, the same way).
    A cell read that is neither (farther, or cut off from the region's border spans) has its
    polygon's whole patch built (`_height_patches`), as have polygons with no span of their
    region under them (Recast seeds those at the centre).
    Arguments as `_height_patches`; ``reg_field``: the region field the polygons read (several
    meshes' joined, with ``layer``; chf.reg when None). [Units: cells, ch]
    """

    def __init__(
        self, chf, verts, poly_idx, npoly, regions, xmin, ymin, pw, ph, bs, ics, radius,
        reg_field=None, layer=None,
    ):  # fmt: skip
        self.chf, self.verts, self.poly_idx, self.npoly = chf, verts, poly_idx, npoly
        self.regions = np.asarray(regions, dtype=np.int64)
        self.xmin = np.asarray(xmin, dtype=np.int64)
        self.ymin = np.asarray(ymin, dtype=np.int64)
        self.w = np.asarray(pw, dtype=np.int64)
        self.h = np.asarray(ph, dtype=np.int64)
        self.bs, self.ics, self.ch, self.radius = bs, F32(ics), F32(chf.ch), radius
        self.spiral, self.ring = _spiral(_spiral_radius(radius, self.w, self.h))
        self.nring = int(self.ring.max()) if self.ring.size else 0
        self.reg_field = np.ascontiguousarray(chf.reg if reg_field is None else reg_field)
        self.layer = None if layer is None else np.asarray(layer, dtype=np.int64)
        # Polygons whose whole patch was built, and where (`_whole_patches`).
        self.whole: _Patches | None = None
        self.whole_at = np.full(self.regions.shape[0], -1, dtype=np.int64)

    def height(self, pid, fx, fy, fz):
        """Recast getHeight for float32 arrays (n,) of points of polygons ``pid`` (n,), in
        the mesh's local frame: uint16 heights (n,) [Units: ch], UNSET_HEIGHT if none near."""
        ix, iz = _patch_cell(
            fx, fz, self.ics, self.xmin[pid], self.ymin[pid], self.w[pid], self.h[pid]
        )
        hgt, known, empty = self._cells(pid, ix, iz)
        # A cell over an empty column stays unset: Recast walks the spiral around it.
        walk_all = np.flatnonzero(empty)
        for block in _row_blocks(walk_all.size, self.spiral.shape[0]):
            walk = walk_all[block]
            hgt[walk], known[walk] = self._spiral(
                pid.take(walk), ix.take(walk), iz.take(walk), fy.take(walk)
            )
        todo = np.flatnonzero(~known)
        if todo.size:
            hgt[todo] = self._whole_patches(pid.take(todo)).height(
                self.whole_at[pid.take(todo)], fx.take(todo), fy.take(todo), fz.take(todo)
            )
        return hgt

    def _cells(self, pid, ix, iz):
        """Patch cells (ix, iz) of polygons pid (int64 (m,) each): (uint16 (m,) heights
        [Units: ch], bool (m,) known, bool (m,) empty). Known: the cell's span is found or
        claimed within `LOCAL_FLOOD_LEVELS` levels, or its column holds no span (empty:
        UNSET_HEIGHT, as nothing can claim it)."""
        hgt = np.full(pid.shape[0], UNSET_HEIGHT, dtype=np.uint16)
        empty = np.zeros(pid.shape[0], dtype=bool)
        todo = np.arange(pid.shape[0])
        # Level by level, each time on a window one step wider, for the cells not yet reached
        # (after level 0, not those over an empty column: nothing reaches them).
        for level in range(LOCAL_FLOOD_LEVELS + 1):
            if not todo.size:
                break
            span = self._claims(pid.take(todo), ix.take(todo), iz.take(todo), level)
            hit = span >= 0
            hgt[todo[hit]] = self.chf.y.take(span[hit])
            todo = todo[~hit]
            if level == 0:
                none = self._empty(pid.take(todo), ix.take(todo), iz.take(todo))
                empty[todo[none]] = True
                todo = todo[~none]
        known = np.ones(pid.shape[0], dtype=bool)
        known[todo] = False
        return hgt, known, empty

    def _column(self, pid, ix, iz) -> np.ndarray:
        """int64 (m,): the compact heightfield's column of patch cells (ix, iz) of polygons
        pid (the patch's corner is the polygon's bounds, inside the tile border)."""
        return (self.xmin.take(pid) + self.bs + ix) + (
            self.ymin.take(pid) + self.bs + iz
        ) * self.chf.width

    def _empty(self, pid, ix, iz) -> np.ndarray:
        """bool (m,): patch cells (ix, iz) of polygons pid whose column holds no span."""
        col = self._column(pid, ix, iz)
        cell_start = self.chf.cell_start
        return cell_start.take(col) == cell_start[1:].take(col)

    def _spiral(self, pid, ix, iz, fy):
        """Recast getHeight's spiral walk around unset patch cells (ix, iz) of polygons pid,
        its cells read by `_cells`: (uint16 (m,) heights, bool (m,) known). Not known: a
        cell of a ring the walk reaches (up to the first ring holding a height) is neither
        reached within the levels nor over an empty column."""
        offs = self.spiral
        w, h = self.w.take(pid)[:, None], self.h.take(pid)[:, None]
        nx = ix[:, None] + offs[:, 0]
        nz = iz[:, None] + offs[:, 1]
        inside = (nx >= 0) & (nz >= 0) & (nx < w) & (nz < h)
        cells = np.flatnonzero(inside)
        at, known_at, _ = self._cells(
            pid.take(cells // offs.shape[0]), nx.ravel().take(cells), nz.ravel().take(cells)
        )
        nh = np.full(nx.shape, UNSET_HEIGHT, dtype=np.uint16)
        nh.ravel()[cells] = at
        unknown = np.zeros(nx.shape, dtype=bool)
        unknown.ravel()[cells] = ~known_at
        # The walk stops after the first ring holding a height: unknown cells up to it matter.
        has = nh != UNSET_HEIGHT
        last = np.where(has.any(axis=1), self.ring.take(np.argmax(has, axis=1)), self.nring)
        known = ~(unknown & (self.ring[None, :] <= last[:, None])).any(axis=1)
        return _spiral_pick(nh, fy, self.ring, self.nring, self.ch), known

    def _claims(self, pid, ix, iz, level: int) -> np.ndarray:
        """The span Recast's flood puts in patch cell (ix, iz) of polygon pid (int64 (m,)
        each) by flood level ``level``: int64 (m,) chf span ids, -1 where not reached yet."""
        offs, step = _diamond(level)
        k_cells = offs.shape[0]
        w, h = self.w.take(pid)[:, None], self.h.take(pid)[:, None]
        cx = ix[:, None] + offs[:, 0]
        cz = iz[:, None] + offs[:, 1]
        inside = (cx >= 0) & (cz >= 0) & (cx < w) & (cz < h)
        cells = inside.ravel().nonzero()[0]
        row = cells // k_cells
        p = pid.take(row)
        col = self._column(p, cx.ravel().take(cells), cz.ravel().take(cells))
        layer_at = None if self.layer is None else self.layer.take(p)
        found = _region_spans(
            self.reg_field, self.chf.cell_start, col, self.regions.take(p), layer_at
        )
        if level == 0:  # the window is the cell itself, always inside the patch
            return found if layer_at is None else np.where(found >= 0, found - layer_at, -1)
        # Per window cell (one spare column for "outside the window"): its span, -1 unset.
        span = np.full((pid.shape[0], k_cells + 1), -1, dtype=np.int64)
        # Recast's seeds are the found spans with a neighbour in another region; every found
        # span is taken as one here: one linked into an unfound cell is a seed (that cell's
        # spans are all in other regions), and the others claim nothing.
        seed = found >= 0
        if layer_at is not None:
            found = np.where(found >= 0, found - layer_at, -1)
        slot = row * (k_cells + 1) + cells % k_cells
        span.ravel()[slot] = found
        open_ = np.zeros(span.shape, dtype=bool)  # inside the patch, not set yet
        open_.ravel()[slot] = found < 0
        # Queue keys: a seed's is its row-major place in the patch; a claimed cell's is its
        # claimer's times 4 plus the direction (FIFO order: claimer first, then direction).
        none = np.iinfo(np.int64).max
        key = np.full(span.shape, none, dtype=np.int64)
        seed_cells = cells[seed]
        key.ravel()[slot[seed]] = cz.ravel().take(seed_cells) * w.ravel().take(
            row.take(seed.nonzero()[0])
        ) + cx.ravel().take(seed_cells)
        links = self.chf.neighbor.reshape(-1)
        span_flat, open_flat = span.ravel(), open_.ravel()
        stride = k_cells + 1
        key_flat = key.ravel()
        src = (key_flat != none).nonzero()[0]
        for _ in range(level):
            # The cells claiming at this level (``src``, flat) and, direction by direction,
            # the open cells they reach over a link: the few pairs read the link table.
            best = np.full(span.size, none, dtype=np.int64)
            best_span = np.full(span.size, -1, dtype=np.int64)
            src_row, src_cell = src // stride, src % stride
            src_key, src_span4 = key_flat.take(src), span_flat.take(src) * 4
            for d in range(4):
                at = src_row * stride + step[:, d].take(src_cell)
                pair = open_flat.take(at).nonzero()[0]  # the spare column is never open
                nxt = links.take(src_span4.take(pair) + d)
                ok = nxt >= 0
                linked, nxt = pair[ok], nxt[ok]
                at = at.take(linked)
                cand = src_key.take(linked) * 4 + d
                better = (cand < best.take(at)).nonzero()[0]
                best[at.take(better)] = cand.take(better)
                best_span[at.take(better)] = nxt.take(better)
            src = (best != none).nonzero()[0]
            span_flat[src] = best_span.take(src)
            open_flat[src] = False
            # Only the cells claimed this level claim at the next.
            key_flat = best
        return span[:, 0]

    def _whole_patches(self, pid) -> _Patches:
        """`_Patches` holding the whole patches of polygons ``pid`` (and of those built
        before); ``whole_at`` maps a polygon to its patch there."""
        need = np.union1d(np.flatnonzero(self.whole_at >= 0), pid)
        if self.whole is None or (self.whole_at[need] < 0).any():
            layer = None if self.layer is None else self.layer[need]
            data, off = _height_patches(
                self.chf, self.verts, self.poly_idx[need], self.npoly[need], self.regions[need],
                self.xmin[need], self.ymin[need], self.w[need], self.h[need], self.bs,
                self.reg_field, layer,
            )  # fmt: skip
            self.whole = _Patches(
                data, off, self.xmin[need], self.ymin[need], self.w[need], self.h[need],
                self.ics, self.ch, self.radius,
            )  # fmt: skip
            self.whole_at[need] = np.arange(need.size)
        return self.whole


# ----------------------------------------------------------------------------------------------
# float32 geometry helpers (Recast's operation order)
# ----------------------------------------------------------------------------------------------


def _dist_pt_seg_sq(px, py, pz, ax, ay, az, bx, by, bz):
    """Recast distancePtSeg (3D, squared) on float32 arrays."""
    pqx, pqy, pqz = bx - ax, by - ay, bz - az
    dx, dy, dz = px - ax, py - ay, pz - az
    d = pqx * pqx + pqy * pqy + pqz * pqz
    t = pqx * dx + pqy * dy + pqz * dz
    pos = d > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(pos, t / np.where(pos, d, F32(1)), t)
    t = np.clip(t, F32(0), F32(1))
    dx = ax + t * pqx - px
    dy = ay + t * pqy - py
    dz = az + t * pqz - pz
    return dx * dx + dy * dy + dz * dz


def _dist_pt_seg2d_sq(px, pz, ax, az, bx, bz):
    """Recast distancePtSeg2d (x/z, squared) on float32 arrays."""
    pqx, pqz = bx - ax, bz - az
    dx, dz = px - ax, pz - az
    d = pqx * pqx + pqz * pqz
    t = pqx * dx + pqz * dz
    pos = d > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(pos, t / np.where(pos, d, F32(1)), t)
    t = np.clip(t, F32(0), F32(1))
    dx = ax + t * pqx - px
    dz = az + t * pqz - pz
    return dx * dx + dz * dz


def _vdist2(ax, az, bx, bz):
    dx = bx - ax
    dz = bz - az
    return np.sqrt(dx * dx + dz * dz)


def _poly_min_extent(px, pz, npoly):
    """Recast polyMinExtent of every polygon: px, pz float32 (P, nvp) padded, npoly (P,).

    Returns float32 (P,): the smallest over edges of the largest distance of another vertex
    from the edge (x/z). Polygons of each vertex count together: edge k against vertices
    k + 2 .. k + n - 1 (mod n), no padding or masks (most polygons are triangles).
    """
    out = np.empty(px.shape[0], dtype=F32)
    for n in np.unique(npoly).tolist():
        rows = np.flatnonzero(npoly == n)
        if n < 3:  # no vertex off an edge: Recast's 0 (its FLT_MAX start with no edge)
            out[rows] = np.sqrt(_F32_FLT_MAX) if n == 0 else F32(0)
            continue
        k = np.arange(n)
        others = (k[:, None] + np.arange(2, n)[None, :]) % n  # (edge, vertex)
        x, z = px[rows, :n], pz[rows, :n]
        ax, az = x[:, :, None], z[:, :, None]
        bx, bz = x[:, (k + 1) % n, None], z[:, (k + 1) % n, None]
        d = _dist_pt_seg2d_sq(x[:, others], z[:, others], ax, az, bx, bz)
        out[rows] = np.sqrt(d.max(axis=2).min(axis=1))
    return out


def _jitter(i, mult):
    v = ((i.astype(np.uint64) * np.uint64(mult)) & np.uint64(0xFFFF)).astype(F32)
    return v / F32(65535.0) * F32(2.0) - F32(1.0)


# ----------------------------------------------------------------------------------------------
# Edges, hull, triangulations
# ----------------------------------------------------------------------------------------------


def _sample_edges(pid, ax, ay, az, bx, by, bz, nn, patches, sample_max_error):
    """Sample and simplify edges a->b of polygons ``pid`` (float32 arrays (e,)), ``nn``
    segments each (Recast's edge tessellation, all edges at once).

    Returns (pts float32 (m, 3), start int64 (e+1,)): the kept interior samples of edge k are
    ``pts[start[k]:start[k+1]]`` in a->b order. Douglas-Peucker splitting gives the same kept
    set whatever order segments are split in, so every round splits all segments at once.
    """
    ne = nn.shape[0]
    counts = nn + 1
    eid = np.repeat(np.arange(ne), counts)
    base = np.zeros(ne + 1, dtype=np.int64)
    np.cumsum(counts, out=base[1:])
    k = np.arange(eid.size, dtype=np.int64) - base[eid]
    u = k.astype(F32) / nn[eid].astype(F32)
    dx, dy, dz = (bx - ax), (by - ay), (bz - az)
    px = ax[eid] + dx[eid] * u
    py = ay[eid] + dy[eid] * u
    pz = az[eid] + dz[eid] * u
    py = patches.height(pid[eid], px, py, pz).astype(F32) * patches.ch
    kept = (k == 0) | (k == nn[eid])
    ends = kept.copy()
    err2 = F32(sample_max_error) * F32(sample_max_error)
    idx = np.arange(eid.size, dtype=np.int64)
    while True:
        m = (~kept).nonzero()[0]
        if not m.size:
            break
        left = np.maximum.accumulate(np.where(kept, idx, -1))
        right = np.minimum.accumulate(np.where(kept, idx, eid.size)[::-1])[::-1]
        a, b = left[m], right[m]
        dev = _dist_pt_seg_sq(px[m], py[m], pz[m], px[a], py[a], pz[a], px[b], py[b], pz[b])
        segmax = np.zeros(eid.size, dtype=F32)
        np.maximum.at(segmax, a, dev)
        split = (dev > 0) & (dev == segmax[a]) & (segmax[a] > err2)
        if not split.any():
            break
        first = np.full(eid.size, eid.size, dtype=np.int64)
        np.minimum.at(first, a[split], m[split])
        kept[first[first < eid.size]] = True
    inner = np.flatnonzero(kept & ~ends)
    start = np.zeros(ne + 1, dtype=np.int64)
    np.cumsum(np.bincount(eid[inner], minlength=ne), out=start[1:])
    return np.stack([px[inner], py[inner], pz[inner]], axis=1), start


def _triangulate_hull(vx, vz, hull, nin):
    """Recast triangulateHull: list of [a, b, c] vertex ids (sequential ear walk)."""
    nh = len(hull)
    ha = np.asarray(hull, dtype=np.int64)
    hx, hz = vx[ha], vz[ha]
    prv = np.roll(np.arange(nh), 1)
    nxt = np.roll(np.arange(nh), -1)
    d = (
        _vdist2(hx[prv], hz[prv], hx, hz)
        + _vdist2(hx, hz, hx[nxt], hz[nxt])
        + _vdist2(hx[nxt], hz[nxt], hx[prv], hz[prv])
    )
    cand = np.flatnonzero(ha < nin)
    start, left, right = 0, 1, nh - 1
    if cand.size:
        dc = d[cand]
        best = int(np.argmin(dc))
        if float(dc[best]) < _FLT_MAX:
            start = int(cand[best])
            left, right = int(nxt[start]), int(prv[start])
    # Pairwise distances along the hull, float32 (values exact) for the walk.
    dist = _vdist2(hx[:, None], hz[:, None], hx[None, :], hz[None, :]).tolist()
    tris = [[hull[start], hull[left], hull[right]]]
    while (left + 1) % nh != right:
        nleft = (left + 1) % nh
        nright = (right - 1) % nh
        dleft = _r(dist[left][nleft] + dist[nleft][right])
        dright = _r(dist[right][nright] + dist[left][nright])
        if dleft < dright:
            tris.append([hull[left], hull[nleft], hull[right]])
            left = nleft
        else:
            tris.append([hull[left], hull[nright], hull[right]])
            right = nright
    return tris


def _triangulate_hulls(hx, hz, hull_ids, hstart, nin):
    """Recast triangulateHull of many hulls at once (the walk in lockstep, one step per round).

    hx, hz: float32 (H,) the hull points of every polygon, in hull order, concatenated;
    hull_ids: int64 (H,) each point's vertex id in its polygon; hstart: int64 (P + 1,) hull
    offsets (every hull has >= 3 points); nin: int64 (P,) polygon vertex counts. Returns int64
    (T, 3) vertex ids and int64 (P + 1,) triangle offsets: polygon p's triangles, in Recast's
    order, are rows tstart[p]:tstart[p + 1] (nh - 2 of them). Equal to `_triangulate_hull`
    polygon by polygon.
    """
    npoly = hstart.shape[0] - 1
    nh = np.diff(hstart)
    owner = np.repeat(np.arange(npoly), nh)
    local = np.arange(hx.shape[0]) - hstart[owner]
    prv = hstart[owner] + (local - 1) % nh[owner]
    nxt = hstart[owner] + (local + 1) % nh[owner]
    d = (
        _vdist2(hx[prv], hz[prv], hx, hz)
        + _vdist2(hx, hz, hx[nxt], hz[nxt])
        + _vdist2(hx[nxt], hz[nxt], hx[prv], hz[prv])
    )
    # Start: the first candidate (an original polygon vertex) with the least d, if that d is
    # below FLT_MAX; else hull point 0.
    masked = np.where(hull_ids < nin[owner], d, F32(np.inf))
    least = np.minimum.reduceat(masked, hstart[:-1])
    hit = np.flatnonzero((masked == least[owner]) & (masked < _F32_FLT_MAX))
    first_owner, first_at = np.unique(owner[hit], return_index=True)
    start = np.zeros(npoly, dtype=np.int64)
    start[first_owner] = local[hit[first_at]]
    left = (start + 1) % nh
    right = (start - 1) % nh
    tstart = np.zeros(npoly + 1, dtype=np.int64)
    np.cumsum(nh - 2, out=tstart[1:])
    tris = np.empty((int(tstart[-1]), 3), dtype=np.int64)
    base = hstart[:-1]
    tris[tstart[:-1]] = np.stack(
        [hull_ids[base + start], hull_ids[base + left], hull_ids[base + right]], axis=1
    )
    active = np.flatnonzero(nh > 3)
    step = 1
    while active.size:
        b, n = base[active], nh[active]
        lft, rgt = left[active], right[active]
        nleft = (lft + 1) % n
        nright = (rgt - 1) % n
        gl, gr, gnl, gnr = b + lft, b + rgt, b + nleft, b + nright
        dleft = _vdist2(hx[gl], hz[gl], hx[gnl], hz[gnl]) + _vdist2(
            hx[gnl], hz[gnl], hx[gr], hz[gr]
        )
        dright = _vdist2(hx[gr], hz[gr], hx[gnr], hz[gnr]) + _vdist2(
            hx[gl], hz[gl], hx[gnr], hz[gnr]
        )
        go_left = dleft < dright
        middle = np.where(go_left, gnl, gnr)
        tris[tstart[active] + step] = np.stack(
            [hull_ids[gl], hull_ids[middle], hull_ids[gr]], axis=1
        )
        left[active] = np.where(go_left, nleft, lft)
        right[active] = np.where(go_left, rgt, nright)
        active = active[(left[active] + 1) % n != right[active]]
        step += 1
    return tris, tstart


def _circum_circle(p1x, p1z, p2x, p2z, p3x, p3z):
    """Recast circumCircle in exact float32 scalar arithmetic: (cx, cz, r)."""
    r = _r
    v2x, v2z = r(p2x - p1x), r(p2z - p1z)
    v3x, v3z = r(p3x - p1x), r(p3z - p1z)
    cp = r(r(v2x * v3z) - r(v2z * v3x))
    if abs(cp) > _EPS_CIRCLE:
        v2sq = r(r(v2x * v2x) + r(v2z * v2z))
        v3sq = r(r(v3x * v3x) + r(v3z * v3z))
        den = 2.0 * cp
        c0 = r(r(r(v2sq * v3z) + r(v3sq * -v2z)) / den)
        c2 = r(r(r(v2sq * -v3x) + r(v3sq * v2x)) / den)
        rad = r(math.sqrt(r(r(c0 * c0) + r(c2 * c2))))
        return r(c0 + p1x), r(c2 + p1z), rad
    return p1x, p1z, 0.0


_EPS_CIRCLE = float(F32(1e-6))
_EPS_FACET = float(F32(1e-5))
_TOL_HI = float(F32(1) + F32(0.001))
_TOL_LO = float(F32(1) - F32(0.001))


def _cross2(ax, az, bx, bz, cx, cz):
    r = _r
    return r(r(r(bx - ax) * r(cz - az)) - r(r(bz - az) * r(cx - ax)))


def _overlap_seg_seg2d(a, b, c, d):
    a1 = _cross2(a[0], a[1], b[0], b[1], d[0], d[1])
    a2 = _cross2(a[0], a[1], b[0], b[1], c[0], c[1])
    if _r(a1 * a2) < 0.0:
        a3 = _cross2(c[0], c[1], d[0], d[1], a[0], a[1])
        a4 = _r(_r(a3 + a2) - a1)
        if _r(a3 * a4) < 0.0:
            return True
    return False


def _overlap_edges(pts, edges, s1, t1):
    """Literal scalar overlapEdges (kept for the fast version's tests)."""
    for s0, t0, _, _ in edges:
        if s0 == s1 or s0 == t1 or t0 == s1 or t0 == t1:
            continue
        if _overlap_seg_seg2d(pts[s0], pts[t0], pts[s1], pts[t1]):
            return True
    return False


def _edge_segments(vx, vz, edge_s, edge_t):
    """The edges as `_overlaps_either` reads them: ends, first end and direction (float32, each
    difference rounded as Recast's ``vcross2`` rounds it), computed once for several tests."""
    ax, az = vx[edge_s], vz[edge_s]
    return edge_s, edge_t, ax, az, vx[edge_t] - ax, vz[edge_t] - az


def _overlaps_either(segments, vx, vz, s, t, u) -> int:
    """Recast's ``overlapEdges(s, u) || overlapEdges(t, u)`` on `_edge_segments`, every edge
    at once, float32 in Recast's operation order: completeFacet's two tests of a point u on
    the circle, in one pass (the segments share their second end u, so the first cross
    product, the edge against u, serves both; s == t tests one segment). An edge sharing an
    end with a segment does not count against it. Returns the index of an edge crossed (in
    the segments' order), -1 for none."""
    es, et, ax, az, ux, uz = segments
    ends = np.array([s, t])
    cx, cz = vx[ends][:, None], vz[ends][:, None]
    dx, dz = vx[u], vz[u]
    a1 = ux * (dz - az) - uz * (dx - ax)  # vcross2(a, b, d), one row for both
    a2 = ux * (cz - az) - uz * (cx - ax)  # vcross2(a, b, c), a row per segment
    seg, at = ((a1 * a2) < F32(0)).nonzero()
    if not at.size:
        return -1
    # (segment, edge) of the (2, E) rows read as one flat index: 1-D takes.
    a1, ax, az = a1.take(at), ax.take(at), az.take(at)
    a2 = a2.reshape(-1).take(seg * a2.shape[1] + at)
    cx, cz = cx.reshape(-1).take(seg), cz.reshape(-1).take(seg)
    a3 = (dx - cx) * (az - cz) - (dz - cz) * (ax - cx)  # vcross2(c, d, a)
    a4 = (a3 + a2) - a1
    hit = (a3 * a4) < F32(0)
    es, et, c = es[at], et[at], ends[seg]
    hit &= (es != c) & (es != u) & (et != c) & (et != u)
    crossed = at[hit]
    return int(crossed[0]) if crossed.size else -1


def _overlap_edges_np(vx, vz, edge_s, edge_t, s1, t1) -> bool:
    """Recast overlapEdges: does segment s1-t1 cross any edge (not sharing an end with it)?
    vx/vz float32 point coordinates; edge_s/edge_t int64 arrays of the edges' ends (equal to
    `_overlap_edges`)."""
    return _overlaps_either(_edge_segments(vx, vz, edge_s, edge_t), vx, vz, s1, s1, t1) >= 0


def _find_edge(edges, s, t):
    for i, e in enumerate(edges):
        if (e[0] == s and e[1] == t) or (e[0] == t and e[1] == s):
            return i
    return _EV_UNDEF


def _update_left_face(e, s, t, f):
    if e[0] == s and e[1] == t and e[2] == _EV_UNDEF:
        e[2] = f
    elif e[1] == s and e[0] == t and e[3] == _EV_UNDEF:
        e[3] = f


def _circle_class(pts, cache, s, t, v, u):
    """Where point u lies against the circumcircle of (s, t, v), Recast's completeFacet test
    with its 0.1 % tolerance: 0 outside, 1 inside, 2 on it (float32 scalar arithmetic)."""
    circle = cache.get((s, t, v))
    if circle is None:
        cx, cz, rad = _circum_circle(*pts[s], *pts[t], *pts[v])
        circle = cache[(s, t, v)] = (cx, cz, _r(rad * _TOL_HI), _r(rad * _TOL_LO))
    cx, cz, r_hi, r_lo = circle
    upx, upz = pts[u]
    dx = _r(upx - cx)
    dz = _r(upz - cz)
    d = _r(math.sqrt(_r(_r(dx * dx) + _r(dz * dz))))
    if d > r_hi:
        return 0
    return 1 if d < r_lo else 2


_F32_TWO = F32(2)
_F32_EPS_CIRCLE = F32(1e-6)
_F32_TOL_HI = F32(1) + F32(0.001)
_F32_TOL_LO = F32(1) - F32(0.001)
_F32_ZERO = F32(0)
_F32_EPS_LEFT = F32(1e-5)
#: New points up to which a cached left-of list is extended with scalar tests.
_FEW_NEW_POINTS = 4
#: A pair of point indices (a, b) as one int key, a << _PAIR_SHIFT | b (a polygon's detail
#: has at most `MAX_VERTS` points, far below 2**20).
_PAIR_SHIFT = 20


def _circle_of(pts, cache, s, t, v):
    """The circumcircle of (s, t, v) as `_circle_class_f32` tests against it, cached: float32
    (x, z, radius + 0.1 %, radius - 0.1 %), then the same four as Python floats."""
    key = ("c32", s, t, v)
    circle = cache.get(key)
    if circle is None:
        p1x, p1z = pts[s]
        p2x, p2z = pts[t]
        p3x, p3z = pts[v]
        v2x, v2z = p2x - p1x, p2z - p1z
        v3x, v3z = p3x - p1x, p3z - p1z
        cp = v2x * v3z - v2z * v3x
        if abs(cp) > _F32_EPS_CIRCLE:
            v2sq = v2x * v2x + v2z * v2z
            v3sq = v3x * v3x + v3z * v3z
            den = _F32_TWO * cp
            c0 = (v2sq * v3z + v3sq * -v2z) / den
            c2 = (v2sq * -v3x + v3sq * v2x) / den
            rad = np.sqrt(c0 * c0 + c2 * c2)
            cx, cz = c0 + p1x, c2 + p1z
        else:
            cx, cz, rad = p1x, p1z, _F32_ZERO
        hi, lo = rad * _F32_TOL_HI, rad * _F32_TOL_LO
        circle = cache[key] = (cx, cz, hi, lo, float(cx), float(cz), float(hi), float(lo))
    return circle


def _circle_class_f32(pts, cache, s, t, v, u):
    """`_circle_class` on NumPy float32 scalars (each operation rounds to float32 as C's float
    does; about 3x faster than rounding Python floats). Same results (tests/core/
    test_detail_fast.py); the circle cache keys differ from `_circle_class`'s (``"c32"``)."""
    cx, cz, r_hi, r_lo = _circle_of(pts, cache, s, t, v)[:4]
    upx, upz = pts[u]
    dx = upx - cx
    dz = upz - cz
    d = np.sqrt(dx * dx + dz * dz)
    if d > r_hi:
        return 0
    return 1 if d < r_lo else 2


#: Relative gap between the float32 distance `_circle_class_f32` computes (five roundings of
#: 2**-24 each, at most about 1.8e-7 relative in all) and the same distance in double
#: precision, with a 5x margin: beyond it, the double's comparisons are the float32 ones.
_DISTANCE_SLACK = 1e-6
#: Distances the double-precision shortcut of `_class_by_distance` takes: far from float32's
#: underflow and overflow, where the relative bound above holds. [Units: wu]
_SHORTCUT_MIN, _SHORTCUT_MAX = 1e-12, 1e18


def _class_by_distance(d: float, r_hi: float, r_lo: float) -> int:
    """`_circle_class_f32`'s answer from the double-precision distance ``d`` of a point to a
    circle's centre (``r_hi``/``r_lo``: the circle's float32 radius + / - 0.1 %, as floats):
    0 outside, 1 inside, 2 on it, or -1 when ``d`` is too close to a radius (or to float32's
    limits) for the float32 test to be sure to agree: then run that test. The first answer
    (surely outside) is also inline in `_delaunay_hull`'s ``pure_run``, its hot loop: change
    both together."""
    if _SHORTCUT_MIN < d < _SHORTCUT_MAX:
        slack = d * _DISTANCE_SLACK
        if d - slack > r_hi:
            return 0
        if d + slack < r_lo:
            return 1
        if r_lo < d - slack and d + slack < r_hi:
            return 2
    return -1


#: `_fold_tables` entry of an edge whose scan meets a point on a circle (its outcome then
#: depends on the edges at the time): `_delaunay_hull` scans it itself.
_FOLD_LITERAL = -2
#: Point sets up to this size get their scans from `_fold_tables` (n^3 circles each; from
#: about 20 points on the literal scans cost less: measured on undulating).
FOLD_TABLE_MAX_POINTS = 16
#: Point sets per `_fold_tables` call (bounds its tables: n^3 floats of each of a few kinds).
FOLD_TABLES_PER_BATCH = 64
#: The rounds of `_details_with_samples` read small polygons' scans from `_fold_tables`
#: (False: every scan in `_delaunay_hull`, the oracle).
BATCH_FOLDS = True


def _fold_scans(point_sets) -> list[tuple[np.ndarray, np.ndarray]]:
    """completeFacet's scan for every ordered point pair (s, t) of several point sets at once.

    ``point_sets``: (vx, vz) float32 arrays per set (at most `FOLD_TABLE_MAX_POINTS` points).
    Returns per set (pt int64 (n, n), on_circle bool (n, n)): at [s, t] the point the scan
    settles on (the first candidate, replaced by each later candidate strictly inside the
    current circle, Recast's test with its 0.1 % tolerance), -1 when no point is left of
    s->t; on_circle where the scan meets a point on a circle (overlap tests against the
    edges decide: `_FOLD_LITERAL` in `_fold_tables`). The same
    float32 operations as `_circle_class_f32` and `left_of`, for every set, pair and
    candidate at once; the scan runs in lockstep over the candidates in index order.
    """
    count = len(point_sets)
    sizes = np.array([vx.shape[0] for vx, _ in point_sets], dtype=np.int64)
    n = int(sizes.max())
    x = np.zeros((count, n), dtype=F32)
    z = np.zeros((count, n), dtype=F32)
    for i, (vx, vz) in enumerate(point_sets):
        x[i, : vx.shape[0]] = vx
        z[i, : vz.shape[0]] = vz
    real = np.arange(n)[None, :] < sizes[:, None]
    # Left of s->t (vcross2 > EPS): [set, s, t, u].
    ux = x[:, None, :] - x[:, :, None]  # [set, s, t]: t - s
    uz = z[:, None, :] - z[:, :, None]
    wx = ux[:, :, None, :]  # [set, s, 1, u]: u - s
    wz = uz[:, :, None, :]
    left = (ux[:, :, :, None] * wz - uz[:, :, :, None] * wx) > _F32_EPS_LEFT
    ids = np.arange(n)
    left &= (ids[None, None, None, :] != ids[None, :, None, None]) & (
        ids[None, None, None, :] != ids[None, None, :, None]
    )
    left &= real[:, None, None, :] & real[:, :, None, None] & real[:, None, :, None]
    # Circle of (s, t, v): [set, s, t, v] (p1 = s, p2 = t, p3 = v), per circle (x, z,
    # radius + 0.1 %, radius - 0.1 %), one row each for the gathers below.
    circle = np.empty((count, n, n, n, 4), dtype=F32)
    parts = _circles(
        ux[:, :, :, None], uz[:, :, :, None], ux[:, :, None, :], uz[:, :, None, :],
        x[:, :, None, None], z[:, :, None, None],
    )  # fmt: skip
    for k, part in enumerate(parts):
        circle[..., k] = part
    del parts
    # Rows as single 16-byte items: a one-dimensional take is several times faster.
    rows = circle.reshape(-1, 4).view(np.complex128).reshape(-1)
    # Candidates first: left[u] is contiguous.
    left = np.moveaxis(left, 3, 0).copy()
    # The scans, candidate by candidate.
    pt = np.full(count * n * n, -1, dtype=np.int64)
    on_circle = np.zeros(count * n * n, dtype=bool)
    lanes_n = np.arange(count * n * n) * n
    set_of_lane = np.repeat(np.arange(count), n * n)
    for u in range(n):
        c = rows.take(lanes_n + np.maximum(pt, 0)).view(F32).reshape(-1, 4)
        _scan_step(
            pt, on_circle, left[u].reshape(-1), u, x[set_of_lane, u], z[set_of_lane, u], *c.T
        )
    return _per_set(pt.reshape(count, n, n), on_circle.reshape(count, n, n), sizes)


def _per_set(pt, on_circle, sizes) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per set the (n, n) corners of padded (sets, N, N) scan results."""
    return [(pt[i, :n, :n], on_circle[i, :n, :n]) for i, n in enumerate(sizes.tolist())]


def _fold_tables(point_sets) -> list[list[list[int]]]:
    """completeFacet's scan for every ordered point pair (s, t) of several point sets at once
    (`_fold_scans`), as nested lists ``fold[s][t]``: the point the scan settles on, -1 when no
    point is left of s->t, or `_FOLD_LITERAL` when it meets a point on a circle."""
    return [_fold_list(scan) for scan in _fold_scans(point_sets)]


def _fold_list(scan) -> list[list[int]]:
    """One `_fold_scans` entry as `_fold_tables` gives it."""
    pt, on_circle = scan
    return np.where(on_circle, _FOLD_LITERAL, pt).tolist()


def _circles(v2x, v2z, v3x, v3z, p1x, p1z):
    """Recast's circumCircle of (p1, p1 + v2, p1 + v3) as `_fold_scans` computes it, float32
    elementwise: (centre x, centre z, radius + 0.1 %, radius - 0.1 %)."""
    cp = v2x * v3z - v2z * v3x
    v2sq = v2x * v2x + v2z * v2z
    v3sq = v3x * v3x + v3z * v3z
    den = _F32_TWO * cp
    round_ok = np.abs(cp) > _F32_EPS_CIRCLE
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c0 = (v2sq * v3z + v3sq * -v2z) / den
        c2 = (v2sq * -v3x + v3sq * v2x) / den
        rad = np.sqrt(c0 * c0 + c2 * c2)
    if np.logical_and.reduce(round_ok, axis=None):  # the common case: no degenerate circle
        return c0 + p1x, c2 + p1z, rad * _F32_TOL_HI, rad * _F32_TOL_LO
    rad = np.where(round_ok, rad, _F32_ZERO)
    return (
        np.where(round_ok, c0 + p1x, p1x),
        np.where(round_ok, c2 + p1z, p1z),
        rad * _F32_TOL_HI,
        rad * _F32_TOL_LO,
    )


def _scan_step(pt, on_circle, cand, u, ux, uz, cx, cz, hi, lo):
    """One candidate ``u`` of completeFacet's scan on many lanes (in place), as `_fold_scans`
    takes it: u at (ux, uz), left of s->t where ``cand``; (cx, cz, hi, lo) the current
    circle, of (s, t, pt)."""
    have = pt >= 0
    dx = ux - cx
    dz = uz - cz
    d = np.sqrt(dx * dx + dz * dz)
    outside = d > hi
    inside = ~outside & (d < lo)
    np.copyto(pt, np.where(cand & (~have | inside), u, pt))
    on_circle |= cand & have & ~outside & ~inside


def _fold_scans_grown(point_sets, scans) -> list[tuple[np.ndarray, np.ndarray]]:
    """`_fold_scans` of point sets that each gained one point, their last, since ``scans``
    (theirs without it): each old (s, t) scan takes the new point as one more candidate (it
    comes last in index order), and the scans of the new point's pairs run whole. Equal to
    `_fold_scans` of the grown sets, at n^2 rather than n^3 work per set."""
    count = len(point_sets)
    sizes = np.array([vx.shape[0] for vx, _ in point_sets], dtype=np.int64)
    n = int(sizes.max())
    x = np.zeros((count, n), dtype=F32)
    z = np.zeros((count, n), dtype=F32)
    pt = np.full((count, n, n), -1, dtype=np.int64)
    on_circle = np.zeros((count, n, n), dtype=bool)
    for i, ((vx, vz), (old_pt, old_on)) in enumerate(zip(point_sets, scans, strict=True)):
        x[i, : vx.shape[0]] = vx
        z[i, : vz.shape[0]] = vz
        k = old_pt.shape[0]
        pt[i, :k, :k] = old_pt
        on_circle[i, :k, :k] = old_on
    sets = np.arange(count)
    new = sizes - 1
    ids = np.arange(n)
    # The old scans, one more candidate: the new point u (never s or t there).
    old = (ids[None, :, None] < new[:, None, None]) & (ids[None, None, :] < new[:, None, None])
    ux = x[:, None, :] - x[:, :, None]  # [set, s, t]: t - s
    uz = z[:, None, :] - z[:, :, None]
    px, pz = x[sets, new][:, None, None], z[sets, new][:, None, None]
    wx = px - x[:, :, None]  # u - s
    wz = pz - z[:, :, None]
    cand = old & ((ux * wz - uz * wx) > _F32_EPS_LEFT)
    at = np.maximum(pt, 0)
    v3x = np.take_along_axis(ux, at, axis=2)  # [set, s, t]: x[pt] - x[s]
    v3z = np.take_along_axis(uz, at, axis=2)
    circle = _circles(ux, uz, v3x, v3z, x[:, :, None], z[:, :, None])
    _scan_step(pt, on_circle, cand, new[:, None, None], px, pz, *circle)
    # The new point's pairs (s = new or t = new, s != t), scanned whole.
    lane_set = np.concatenate([np.repeat(sets, new), np.repeat(sets, new)])
    other = np.arange(int(new.sum())) - np.repeat(np.cumsum(new) - new, new)
    lane_s = np.concatenate([np.repeat(new, new), other])
    lane_t = np.concatenate([other, np.repeat(new, new)])
    xs, zs = x[lane_set, lane_s], z[lane_set, lane_s]
    lx, lz = x[lane_set], z[lane_set]  # (lanes, n) candidates
    v2x = (x[lane_set, lane_t] - xs)[:, None]
    v2z = (z[lane_set, lane_t] - zs)[:, None]
    v3x = lx - xs[:, None]
    v3z = lz - zs[:, None]
    left = (v2x * v3z - v2z * v3x) > _F32_EPS_LEFT
    left &= (ids[None, :] != lane_s[:, None]) & (ids[None, :] != lane_t[:, None])
    left &= ids[None, :] < sizes[lane_set][:, None]
    table = _circles(v2x, v2z, v3x, v3z, xs[:, None], zs[:, None])
    rows = np.stack(table, axis=-1).reshape(-1, 4).view(np.complex128).reshape(-1)
    lanes_n = np.arange(lane_set.shape[0]) * n
    lane_pt = np.full(lane_set.shape[0], -1, dtype=np.int64)
    lane_on = np.zeros(lane_set.shape[0], dtype=bool)
    for u in range(n):
        c = rows.take(lanes_n + np.maximum(lane_pt, 0)).view(F32).reshape(-1, 4)
        _scan_step(lane_pt, lane_on, left[:, u], u, lx[:, u], lz[:, u], *c.T)
    pt[lane_set, lane_s, lane_t] = lane_pt
    on_circle[lane_set, lane_s, lane_t] = lane_on
    return _per_set(pt, on_circle, sizes)


def _extend_pure_scans(pure_scans: dict, vx, vz, q: int) -> set[int]:
    """Bring a polygon's settled scans up to its newest point ``q``, in place; returns the
    keys of the scans it changed (taken by ``q``, or left on its circle and dropped).

    ``pure_scans`` maps an ordered pair (s, t) (the key s << `_PAIR_SHIFT` | t) to the point
    completeFacet's scan of s -> t settles on over the points before ``q`` (-1: none left of
    it), for scans that met no point on a circle (their outcome depends on the points alone).
    ``q`` comes last in index order, so each scan takes it as one more candidate: left of
    s -> t, it becomes the first candidate of a scan that had none, or replaces a point whose
    circle it lies inside; on that circle (within the 0.1 % tolerance) the outcome depends on
    the edges, and the scan leaves the map (`_delaunay_hull` scans it itself). All scans at
    once, in the float32 operations of ``left_of`` and `_circle_class_f32`."""
    changed: set[int] = set()
    if not pure_scans:
        return changed
    keys = list(pure_scans)
    st = np.array(keys, dtype=np.int64)
    pt = np.fromiter(pure_scans.values(), dtype=np.int64, count=len(keys))
    s, t = st >> _PAIR_SHIFT, st & ((1 << _PAIR_SHIFT) - 1)
    qx, qz = vx[q], vz[q]
    sx, sz = vx[s], vz[s]
    ux, uz = vx[t] - sx, vz[t] - sz
    rows = ((ux * (qz - sz) - uz * (qx - sx)) > _F32_EPS_LEFT).nonzero()[0]
    if not rows.size:
        return changed
    first = pt[rows] < 0
    has = rows[~first]
    cx, cz, hi, lo = _circles(
        ux[has], uz[has], vx[pt[has]] - sx[has], vz[pt[has]] - sz[has], sx[has], sz[has]
    )
    dx = qx - cx
    dz = qz - cz
    d = np.sqrt(dx * dx + dz * dz)
    outside = d > hi
    inside = ~outside & (d < lo)
    for i in rows[first].tolist() + has[inside].tolist():
        pure_scans[keys[i]] = q
        changed.add(keys[i])
    for i in has[~outside & ~inside].tolist():
        del pure_scans[keys[i]]
        changed.add(keys[i])
    return changed


def faces_from_edges(edges, nfaces: int) -> list[list[int]]:
    """delaunayHull's last step: the triangles [a, b, c] of ``nfaces`` faces from the edges
    [s, t, left face, right face], incomplete faces dropped (the last one moved into their
    place, as Recast does)."""
    tris = [[-1, -1, -1] for _ in range(nfaces)]
    for e0, e1, e2, e3 in edges:
        if e3 >= 0:
            t = tris[e3]
            if t[0] == -1:
                t[0], t[1] = e0, e1
            elif t[0] == e1:
                t[2] = e0
            elif t[1] == e0:
                t[2] = e1
        if e2 >= 0:
            t = tris[e2]
            if t[0] == -1:
                t[0], t[1] = e1, e0
            elif t[0] == e0:
                t[2] = e1
            elif t[1] == e1:
                t[2] = e0
    _drop_incomplete(tris, lambda t: t[0] == -1 or t[1] == -1 or t[2] == -1)
    return tris


def _drop_incomplete(faces: list, incomplete) -> None:
    """delaunayHull's removal of incomplete faces, in place: each is replaced by the last
    face, which is then checked in its place."""
    i = 0
    while i < len(faces):
        if incomplete(faces[i]):
            faces[i] = faces[-1]
            faces.pop()
            continue
        i += 1


def _delaunay_hull(vx, vz, hull, cache=None, fold=None):
    """Recast delaunayHull on float32 points (x/z arrays): list of (a, b, c) triangles.

    ``cache``: dict shared by the calls of one polygon (points are only ever appended, so
    circumcircles and point-circle tests of existing points stay valid; the scans that
    settled without meeting a point on a circle are brought up to one new point at once,
    `_extend_pure_scans`; the others keep their runs between such points, and the edges
    found crossing a point-on-circle's segments). ``fold``: optional
    `_fold_tables` entry for these points: completeFacet's scan result per edge, read instead
    of scanning where it does not depend on the edges.
    """
    if cache is None:
        cache = {}
    npts = vx.shape[0]
    max_edges = npts * 10
    # The settled scans of the polygon's last call, brought up to its one new point at once
    # (`_extend_pure_scans`): the walk then reads them without scanning.
    state = cache.get("pure")
    changed = None  # the settled scans the new point changed, when they were brought up
    if state is not None and state[0] == npts - 1:
        pure_scans = state[1]
        changed = _extend_pure_scans(pure_scans, vx, vz, npts - 1)
    elif state is not None and state[0] == npts:
        pure_scans = state[1]
    else:
        pure_scans = {}
    cache["pure"] = (npts, pure_scans)
    pure_get = pure_scans.get
    shift = _PAIR_SHIFT
    sqrt = math.sqrt
    class_by_distance = _class_by_distance
    slack, shortcut_min, shortcut_max = _DISTANCE_SLACK, _SHORTCUT_MIN, _SHORTCUT_MAX
    # The points as NumPy float32 scalars (`_circle_class_f32`) and as Python floats, made
    # when a scan first needs them (with fold tables, most calls never do); kept for the
    # polygon's later calls, which add their new points.
    pts: list
    fpts: list
    pts, fpts = cache.setdefault("points", ([], []))

    def scalars() -> None:
        have = len(pts)
        pts.extend(zip(vx[have:], vz[have:], strict=True))
        fpts.extend(zip(vx[have:].tolist(), vz[have:].tolist(), strict=True))

    def left_of(s, t):
        # The points strictly left of s->t (vcross2 > EPS, float32 in Recast's order), in
        # index order, s and t left out. Cached per (s, t) for the polygon's later calls: points
        # are only appended, so only the new ones are tested.
        key = ("left", s, t)
        known = cache.get(key)
        start = 0 if known is None else known[0]
        if start == npts:
            return known[1]
        if known is not None and npts - start <= _FEW_NEW_POINTS:
            # A point or two added since: float32 scalars beat array set-up here.
            if len(pts) < npts:
                scalars()
            sx, sz = pts[s]
            tx, tz = pts[t]
            ux, uz = tx - sx, tz - sz
            found = known[1]
            for u in range(start, npts):
                px, pz = pts[u]
                if u != s and u != t and ux * (pz - sz) - uz * (px - sx) > _F32_EPS_LEFT:
                    found = [*found, u]
            cache[key] = (npts, found)
            return found
        # vcross2(s, t, u) = ux * wz - uz * wx, in place; s and t need no exclusion: their
        # cross product is exactly 0 (w is 0, or w is u and both products round alike).
        sx, sz = vx[s], vz[s]
        ux, uz = vx[t] - sx, vz[t] - sz
        wx, wz = vx[start:] - sx, vz[start:] - sz
        wz *= ux
        wx *= uz
        wz -= wx
        found = (wz > _F32_EPS_LEFT).nonzero()[0]
        if start:
            found += start
        new = found.tolist()
        found = new if known is None else known[1] + new
        cache[key] = (npts, found)
        return found

    edges: list[list[int]] = []
    # Edges are unique per vertex pair (addEdge refuses a second one), so findEdge's linear
    # scan is a lookup by the unordered pair (a < b) as one int, a << `_PAIR_SHIFT` | b (it
    # hashes faster than a tuple, and this is the hot loop).
    edge_at: dict[int, int] = {}
    edge_at_get = edge_at.get
    # The edges' ends also as lists, made arrays for the vectorized overlap test when it runs
    # (kept while no edge is added: a scan's tests come in pairs).
    ends_s: list[int] = []
    ends_t: list[int] = []
    as_arrays: list = [-1, None]

    def overlaps(s, t, u):
        # overlapEdges(s, u) || overlapEdges(t, u) against the edges so far. An edge found
        # crossing is kept for the polygon's later calls: while it exists, the answer is yes
        # (the points never move); otherwise the edges are tested.
        key = ("crossed", s, t, u)
        crossed = cache.get(key)
        if crossed is not None and crossed in edge_at:
            return True
        n_edges = len(edges)
        if as_arrays[0] != n_edges:
            ends = np.array(ends_s, np.int64), np.array(ends_t, np.int64)
            as_arrays[:] = n_edges, _edge_segments(vx, vz, *ends)
        e = _overlaps_either(as_arrays[1], vx, vz, s, t, u)
        if e < 0:
            return False
        a, b = ends_s[e], ends_t[e]
        cache[key] = a << shift | b if a < b else b << shift | a
        return True

    def pure_run(s, t, candidates, first, pt):
        # completeFacet's scan of s -> t from candidate ``first`` on with ``pt`` the point so
        # far (-1: none), up to the first point on the current circle (class 2, whose outcome
        # depends on the edges): (its place, pt then), or (len(candidates), the result).
        # Such a run depends on the points only, so it is kept for the polygon's later calls:
        # points are only appended, so a run that stopped stays as it was, and one that ran
        # to the end goes on over the points added since.
        key = ("run", s, t, first, pt)
        known = cache.get(key)
        if known is not None:
            at, pt, stopped = known
            if stopped or at == len(candidates):
                return at, pt
            first = at
        if len(pts) < npts:
            scalars()
        circle = None  # (s, t, pt)'s circle, looked up when pt changes
        for at, u in enumerate(candidates[first:] if first else candidates, first):
            if pt < 0:  # first candidate: its circumcircle is the current one
                pt = u
                continue
            if circle is None:
                circle = cache.get(("c32", s, t, pt)) or _circle_of(pts, cache, s, t, pt)
                cx, cz, r_hi, r_lo = circle[4], circle[5], circle[6], circle[7]
            # The class in double precision where it is sure (this loop is most of the
            # stage's time); the circle is held while pt stays. Most candidates lie surely
            # outside: `_class_by_distance`'s first answer, inline (a call per candidate
            # costs more than the test; keep the two the same).
            px, pz = fpts[u]
            dx = px - cx
            dz = pz - cz
            d = sqrt(dx * dx + dz * dz)
            if d - d * slack > r_hi and shortcut_min < d < shortcut_max:
                continue
            where = class_by_distance(d, r_hi, r_lo)
            if where < 0:
                where = _circle_class_f32(pts, cache, s, t, pt, u)
            if where == 0:
                continue
            if where == 2:
                cache[key] = (at, pt, True)
                return at, pt
            pt = u
            circle = None
        cache[key] = (len(candidates), pt, False)
        return len(candidates), pt

    def scan(s, t):
        # completeFacet's scan of s -> t: the point it settles on, -1 for none. A fold over
        # the candidates in index order; while it meets no point on a circle (class 2, whose
        # outcome depends on the current edges) it depends on the points only, so a later
        # call of this polygon resumes it at the points added since (they come last). Pure
        # runs between the points on a circle are read from the polygon's memo
        # (`pure_run`); only the overlap tests run here every time.
        candidates = left_of(s, t)
        n_candidates = len(candidates)
        first, pt = 0, -1
        pure = True
        while True:
            at, pt = pure_run(s, t, candidates, first, pt)
            if at == n_candidates:
                break
            pure = False
            u = candidates[at]
            if not overlaps(s, t, u):
                pt = u
            first = at + 1
        if pure:
            pure_scans[s << shift | t] = pt
        return pt

    faces: list = []  # per face its triangle (a, b, c), or None while incomplete (tuples:
    # `_TriangleGaps` keys them as they are)
    # The walk's steps (edges completed) in order, each as its edge index << `_PAIR_SHIFT`
    # | (the point found + 1): the polygon's next call resumes the walk where its new point
    # first changes a step (`_resumed_walk`).
    steps: list[int] = []
    first_edge = 0
    walk = cache.get("walk") if RESUME_WALKS else None
    if walk is not None and walk.npts == npts - 1 and walk.hull is hull and changed is not None:
        if len(pts) < npts:
            scalars()
        resumed = _resumed_walk(walk, pts, cache, pure_scans, changed)
        if resumed is None:  # no step changes: the walk and its triangles are the last call's
            cache["walk"] = walk._replace(npts=npts)
            return walk.faces
        first_edge, edges, ends_s, ends_t, keys, faces, steps = resumed
        edge_at.update(zip(keys, range(len(edges)), strict=True))
    else:
        # Recast's hull edges (addEdge(hull[i - 1], hull[i], EV_HULL, EV_UNDEF)).
        for i in range(len(hull)):
            a, b = hull[i - 1], hull[i]
            key = a << shift | b if a < b else b << shift | a
            if key not in edge_at and len(edges) < max_edges:
                edge_at[key] = len(edges)
                edges.append([a, b, _EV_HULL, _EV_UNDEF])
                ends_s.append(a)
                ends_t.append(b)
    nfaces = len(faces)
    capped = False
    steps_append = steps.append
    # Every edge is made with its left face set (EV_HULL for the hull's, the face that made
    # it for the others) and updateLeftFace only fills an undefined side, so Recast's loop
    # only ever completes the right side: completeFacet of t -> s for the edge s -> t. The
    # list grows while it is walked, as Recast's currentEdge loop.
    for i, edge in enumerate(islice(edges, first_edge, None), first_edge):
        if edge[3] != _EV_UNDEF:
            continue
        t, s = edge[0], edge[1]
        pt = _FOLD_LITERAL if fold is None else fold[s][t]
        if pt == _FOLD_LITERAL:  # the scan depends on the edges, or there is no table
            pt = pure_get(s << shift | t, _FOLD_LITERAL)  # a settled scan, up to date
            if pt == _FOLD_LITERAL:
                pt = scan(s, t)
        steps_append(i << shift | (pt + 1))
        if pt < 0:
            edge[3] = _EV_HULL
            continue
        edge[3] = nfaces  # updateLeftFace(cur, s, t): this side is s -> t's left
        # Recast's findEdge(a, b), then addEdge(a, b, face, undef) or updateLeftFace, for
        # (pt, s) and (t, pt); inline: this is the hot loop. An existing edge's left side is
        # set, so only one running b -> a takes the face (on its right). The edges naming
        # the face (new, or with that side still free): with at least one besides this
        # one, faces_from_edges reads the face as t, s, pt (see below).
        # The two edges written out, (pt, s) then (t, pt): a loop over a pair of tuples costs
        # a tenth of this step.
        naming = 1
        key = pt << shift | s if pt < s else s << shift | pt
        e = edge_at_get(key)
        if e is None:
            if len(edges) < max_edges:
                edge_at[key] = len(edges)
                edges.append([pt, s, nfaces, _EV_UNDEF])
                ends_s.append(pt)
                ends_t.append(s)
                naming = 2
            else:  # a later call's larger cap would add it: its walk starts afresh
                capped = True
        else:
            other = edges[e]
            if other[0] != pt and other[3] == _EV_UNDEF:
                other[3] = nfaces
                naming = 2
        key = t << shift | pt if t < pt else pt << shift | t
        e = edge_at_get(key)
        if e is None:
            if len(edges) < max_edges:
                edge_at[key] = len(edges)
                edges.append([t, pt, nfaces, _EV_UNDEF])
                ends_s.append(t)
                ends_t.append(pt)
                naming += 1
            else:
                capped = True
        else:
            other = edges[e]
            if other[0] != t and other[3] == _EV_UNDEF:
                other[3] = nfaces
                naming += 1
        faces.append((t, s, pt) if naming > 1 else None)
        nfaces += 1
    # Recast reads the triangles back from the edges when done (faces_from_edges, the
    # literal port): the first edge naming a face, in edge order, gives two corners (t, s
    # for the edge completed), a second one the third. The edges naming face f are set when
    # f is made, never after: the edge completed, and (pt, s) and (t, pt) where they are new
    # or had that side free. Those come after the edge completed (every edge before it has
    # both sides set), so each face reads t, s, pt, or stays incomplete when no other edge
    # names it; the incomplete ones are dropped as there (the last face moved into place).
    walked = faces
    if None in faces:
        faces = faces.copy()
        _drop_incomplete(faces, lambda face: face is None)
    if RESUME_WALKS:
        # Kept for the polygon's next call where resuming it pays (keeping every polygon's
        # walk alive costs more than it saves on scenes of many small polygons).
        long_walk = len(steps) >= RESUME_MIN_STEPS and not capped
        cache["walk"] = (
            _Walk(npts, hull, steps, edges, ends_s, ends_t, edge_at, walked, faces)
            if long_walk
            else None
        )
    return faces


class _Walk(NamedTuple):
    """A `_delaunay_hull` call's walk, kept in the polygon's cache for its next call
    (`_resumed_walk`)."""

    npts: int  # the points it triangulated
    hull: list  # the hull it started from (the same list object every call of a polygon)
    steps: list[int]  # edges completed, in order: edge index << _PAIR_SHIFT | point found + 1
    edges: list[list[int]]  # [a, b, left face, right face] each, as the walk left them
    ends_s: list[int]  # the edges' first ends
    ends_t: list[int]  # the edges' second ends
    edge_at: dict[int, int]  # edge index by unordered pair key, in the edges' order
    walked: list  # per face (t, s, pt), or None where incomplete
    faces: list  # the triangles returned (incomplete faces dropped)


def _resumed_walk(walk: _Walk, pts, cache, pure_scans: dict, changed: set[int]):
    """Where `_delaunay_hull`'s walk for a polygon that gained one point (its last, ``q``)
    first differs from the walk of its previous call (``walk``, as that call kept it), and
    the walk's state there: None when no step differs (the triangles are the same), else
    (index of the edge to complete next, edges, their ends s and t, their pair keys, faces,
    steps) as they were when the old walk reached that edge. The old walk's edges are reused
    (changed in place): it is not read again. ``pts``: the points as float32 scalars, ``q``
    included; ``pure_scans``/``changed``: the settled scans and the keys of those ``q``
    changed, as `_extend_pure_scans` just left and returned them.

    Each step completes an edge with completeFacet's scan over the points left of it in index
    order; q comes last, so while the edges are the old walk's, a step's scan reaches what
    it did before and then takes q as one more candidate. It keeps its point when q is not
    left of the edge, or lies surely outside the circle of (s, t, point found) (Recast's 0.1 %
    tolerance); otherwise (no point before, inside, or on the circle, where the edges decide)
    the step may change, and from the first such step the walk runs anew. A settled scan's
    step has had that test in `_extend_pure_scans` (changed or not); the others' (scans that
    met a point on a circle) is made here, in the float32 operations of ``left_of`` and
    `_circle_class_f32`. Before that step, every step and so every edge and face is the old
    walk's: the edges that existed then (made by the faces before it), their right faces set
    then (a face before it, or no face by the edge's own earlier step).
    """
    steps, ends_s, ends_t = walk.steps, walk.ends_s, walk.ends_t
    q = len(pts) - 1
    qx, qz = pts[q]
    shift = _PAIR_SHIFT
    mask = (1 << shift) - 1
    nfaces = 0
    for k in range(len(steps)):  # to the first step q may change
        completed, pt = steps[k] >> shift, (steps[k] & mask) - 1
        s, t = ends_t[completed], ends_s[completed]  # it completes s -> t for the edge (t, s)
        key = s << shift | t
        if key in changed:
            break
        if key not in pure_scans:
            sx, sz = pts[s]
            tx, tz = pts[t]
            if (tx - sx) * (qz - sz) - (tz - sz) * (qx - sx) > _F32_EPS_LEFT and (
                pt < 0 or _circle_class_f32(pts, cache, s, t, pt, q)
            ):
                break
        nfaces += pt >= 0
    else:
        return None
    first_edge = steps[k] >> shift
    # Edges are made in face order (the hull's first, left face EV_HULL), and every edge
    # before the first one completed anew had its right face set when the walk passed it.
    n_edges = bisect_left(walk.edges, nfaces, key=_left_face)
    edges = walk.edges[:n_edges]
    for edge in islice(edges, first_edge, None):
        if edge[3] == _EV_HULL or edge[3] >= nfaces:
            edge[3] = _EV_UNDEF
    keys = list(islice(walk.edge_at, n_edges))
    return (
        first_edge, edges, ends_s[:n_edges], ends_t[:n_edges], keys, walk.walked[:nfaces],
        steps[:k],
    )  # fmt: skip


def _left_face(edge: list[int]) -> int:
    return edge[2]


def _height_gap(px, py, pz, a, b, c):
    """Recast distToTriMesh's test of points against triangles (a, b, c: float32 (..., 3)
    local (x, height, row) corners broadcasting with the points px/py/pz): |height of the
    triangle under the point - py| where the point lies over it (barycentric, 1e-4 slack),
    else FLT_MAX. float32 in Recast's operation order. See `_height_gap_stacked`."""
    return _height_gap_stacked(px, py, pz, a, np.concatenate((c[None], b[None])))


@np.errstate(divide="ignore", invalid="ignore", over="ignore")
def _height_gap_stacked(px, py, pz, a, cb):
    """`_height_gap` with the corners c and b stacked: ``cb`` float32 (2, ..., 3), cb[0] = c,
    cb[1] = b (a caller gathering its corners can lay them out so, without a copy).

    The two edge vectors, and then the two barycentric coordinates, go through each step
    stacked on a leading axis of 2: one NumPy call per step for both. Its calls are most of
    its time (undulating's detail stage makes 751 of them on about 500 pairs each), and the
    stacking halves them; every value is computed by the same float32 operations as in
    Recast, in the same order (the literal form is the test oracle). The float warnings of
    degenerate triangles are off for the whole call (a decorator costs less than a block)."""
    # v[0] = c - a, v[1] = b - a: Recast's v0 and v1.
    v = cb - a
    vx, vy, vz = v[..., 0], v[..., 1], v[..., 2]
    v2x = px - a[..., 0]
    v2z = pz - a[..., 2]
    # squares[0] = dot00, squares[1] = dot11 (each x * x + z * z).
    squares = vx * vx
    squares += vz * vz
    dot01 = vx[0] * vx[1]
    dot01 += vz[0] * vz[1]
    inv = F32(1) / (squares[0] * squares[1] - dot01 * dot01)
    # dots[0] = dot02, dots[1] = dot12.
    dots = vx * v2x
    dots += vz * v2z
    # uv[0] = u = (dot11 * dot02 - dot01 * dot12) * inv, uv[1] = v = (dot00 * dot12 -
    # dot01 * dot02) * inv.
    uv = squares[::-1] * dots
    uv -= dot01 * dots[::-1]
    uv *= inv
    inside = np.logical_and.reduce(uv >= -_F32_EPS_INSIDE, axis=0)
    inside &= (uv[0] + uv[1]) <= F32(1) + _F32_EPS_INSIDE
    # Recast's a.y + v0.y * u + v1.y * v, left to right.
    rise = vy * uv
    y = a[..., 1] + rise[0]
    y += rise[1]
    y -= py
    np.abs(y, out=y)
    return np.where(inside, y, _F32_FLT_MAX)


def _triangle_terms(a, b, c):
    """The point-independent part of `_height_gap` per triangle: float32 (t, 13), columns ax,
    ay, az, v0x, v0y, v0z, v1x, v1y, v1z, dot00, dot01, dot11 and the inverse denominator;
    the same float32 operations."""
    out = np.empty((a.shape[0], 13), dtype=F32)
    out[:, 0:3] = a
    out[:, 3:6] = c - a
    out[:, 6:9] = b - a
    v0x, v0z, v1x, v1z = out[:, 3], out[:, 5], out[:, 6], out[:, 8]
    out[:, 9] = v0x * v0x + v0z * v0z
    out[:, 10] = v0x * v1x + v0z * v1z
    out[:, 11] = v1x * v1x + v1z * v1z
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out[:, 12] = F32(1) / (out[:, 9] * out[:, 11] - out[:, 10] * out[:, 10])
    return out


def _height_gap_terms(px, py, pz, terms):
    """`_height_gap` of points (k,) against triangles given by `_triangle_terms` rows (k, 13),
    pair by pair: the same float32 values."""
    v2x = px - terms[:, 0]
    v2z = pz - terms[:, 2]
    v0x, v0z, v1x, v1z = terms[:, 3], terms[:, 5], terms[:, 6], terms[:, 8]
    dot00, dot01, dot11, inv = terms[:, 9], terms[:, 10], terms[:, 11], terms[:, 12]
    dot02 = v0x * v2x + v0z * v2z
    dot12 = v1x * v2x + v1z * v2z
    with np.errstate(invalid="ignore", over="ignore"):
        u = (dot11 * dot02 - dot01 * dot12) * inv
        v = (dot00 * dot12 - dot01 * dot02) * inv
        eps = _F32_EPS_INSIDE
        inside = (u >= -eps) & (v >= -eps) & ((u + v) <= F32(1) + eps)
        y = terms[:, 1] + terms[:, 4] * u + terms[:, 7] * v
        return np.where(inside, np.abs(y - py), _F32_FLT_MAX)


def _dist_to_tri_mesh(px, py, pz, verts, tris):
    """Recast distToTriMesh for points (s,) against triangles (t, 3) of ``verts`` (float32
    (n, 3) local): (s,) float32, -1 = miss."""
    a, b, c = (verts[tris[:, k]][None] for k in range(3))
    d = _height_gap(px[:, None], py[:, None], pz[:, None], a, b, c)
    dmin = d.min(axis=1) if d.shape[1] else np.full(px.shape, _FLT_MAX, dtype=F32)
    return np.where(dmin == _F32_FLT_MAX, F32(-1), dmin)


class _TriangleGaps:
    """`_dist_to_tri_mesh` of one polygon's samples against its triangles as they change.

    Each triangle's gaps to all samples (a row of float32, `_height_gap`) are computed the
    first time the triangle appears and kept: vertices are only appended and never move, and
    a gap depends only on the sample and the triangle's corners in their order, so a kept row
    is what computing it again gives. A Delaunay step changes a few triangles around the new
    point; the others are read back. The minimum over the current triangles' rows is
    distToTriMesh's (the order of a float minimum does not matter). When the table is full,
    the rows of triangles no longer present are dropped. Memory: at most about 4 x the
    current triangles' rows x samples x 4 bytes.
    """

    def __init__(self, samples):
        self.jx, self.jy, self.jz = samples
        self.rows: dict[tuple[int, int, int], int] = {}
        self.table = np.empty((0, self.jx.size), dtype=F32)
        self.used = 0

    def distances(self, verts, tris) -> np.ndarray:
        """(s,) float32 as `_dist_to_tri_mesh` (verts float32 (n, 3) local; tris a list of
        (a, b, c) tuples, as `_delaunay_hull` makes them, or of [a, b, c] lists): the smallest
        gap over the triangles, -1 where the sample is over none."""
        keys, new = self.pending(tris)
        if new:
            # Corners (c, b, a) of each new triangle, corner-major: c and b stacked as
            # `_height_gap_stacked` takes them, (2, m, 1, 3), and a (m, 1, 3), all views.
            corners = verts[np.array(new, dtype=np.int64)[:, ::-1]].transpose(1, 0, 2)[:, :, None]
            self.store(new, _height_gap_stacked(self.jx, self.jy, self.jz, corners[2], corners[:2]))
        if not keys:
            return np.full(self.jx.shape, F32(-1), dtype=F32)
        dmin = self.smallest(keys)
        return np.where(dmin == _F32_FLT_MAX, F32(-1), dmin)

    def pending(self, tris) -> tuple[list, list]:
        """The triangles ``tris`` as keys (a, b, c) and those of them without a row yet, with
        room made for them in the table. (The set difference runs in C; a triangle's row is
        wherever it lands.)"""
        keys = tris if not tris or type(tris[0]) is tuple else list(map(tuple, tris))
        new = list(set(keys).difference(self.rows))
        if new and self.used + len(new) > self.table.shape[0]:
            self._make_room(keys, len(new))
        return keys, new

    def store(self, new: list, gap_rows: np.ndarray) -> None:
        """Keep the gap rows (float32 (len(new), s)) of the triangles ``new`` (from
        `pending`)."""
        first = self.used
        self.table[first : first + len(new)] = gap_rows
        self.rows.update(zip(new, range(first, first + len(new)), strict=True))
        self.used += len(new)

    def smallest(self, keys) -> np.ndarray:
        """(s,) float32: the smallest gap over the triangles ``keys`` (all stored; at least
        one), FLT_MAX where the sample is over none."""
        return np.minimum.reduce(self.table[list(map(self.rows.__getitem__, keys))], axis=0)

    def _make_room(self, keys, n_new: int) -> None:
        """Keep the rows of the current triangles (``keys``), in a table with room for them,
        ``n_new`` more and as many again."""
        kept = [key for key in keys if key in self.rows]
        size = max(64, 2 * (len(kept) + n_new), self.table.shape[0])
        if len(kept) + n_new > size // 2:
            size *= 2
        table = np.empty((size, self.jx.size), dtype=F32)
        if kept:
            table[: len(kept)] = self.table[[self.rows[key] for key in kept]]
        self.rows = dict(zip(kept, range(len(kept)), strict=True))
        self.table, self.used = table, len(kept)


def _tri_flags(tris, hull):
    nh = len(hull)
    on = {(hull[j - 1], hull[j]) for j in range(nh)}

    def flag(a, b):
        return 1 if (a < nh and b < nh and (a, b) in on) else 0

    return [[a, b, c, flag(a, b) | (flag(b, c) << 2) | (flag(c, a) << 4)] for a, b, c in tris]


def _build_poly_detail(verts, hull, nin, interior, samples, sample_max_error):
    """Recast buildPolyDetail after edge sampling, for one polygon.

    ``verts`` float32 (n, 3) local (x, height, row): the polygon then its kept edge samples;
    ``hull`` their outline order; ``interior``: whether to add interior samples; ``samples``
    (jx, jy, jz) float32 jittered interior sample points. Returns (verts, [[a, b, c, flags]]).
    """
    vx, vz = verts[:, 0], verts[:, 2]
    tris = _triangulate_hull(vx, vz, hull, nin)
    if not interior or not tris or samples[0].size == 0:
        return verts, _tri_flags(tris, hull)
    added = np.zeros(samples[0].size, dtype=bool)
    verts, tris = _grow_poly_detail(verts, tris, hull, samples, added, 0, {}, sample_max_error)
    return verts, _tri_flags(tris[:MAX_TRIS], hull)


def _grow_poly_detail(verts, tris, hull, samples, added, done, cache, sample_max_error):
    """Recast's interior sample insertion for one polygon from its ``done``-th step on: while
    a sample is more than ``sample_max_error`` off the triangles, add the worst one (marked in
    ``added``) and re-triangulate (Delaunay; ``cache`` kept across the polygon's calls).
    Returns (verts, tris)."""
    jx, jy, jz = samples
    gaps = _TriangleGaps(samples) if CACHE_GAPS else None
    for _ in range(done, jx.size):
        if verts.shape[0] >= MAX_VERTS or not tris:
            break
        if gaps is not None:
            d = gaps.distances(verts, tris)
        else:
            d = _dist_to_tri_mesh(jx, jy, jz, verts, np.asarray(tris, dtype=np.int64))
        d = np.where(added | (d < 0), F32(0), d)
        grown = _insert_worst(verts, d, hull, samples, added, cache, sample_max_error)
        if grown is None:
            break
        verts, tris = grown
    return verts, tris


def _insert_worst(verts, d, hull, samples, added, cache, sample_max_error):
    """One insertion step of `_grow_poly_detail`: ``d`` float32 (s,) each sample's gap (0 for
    the samples added or over no triangle). Adds the worst sample (the first on ties, marked
    in ``added``) and re-triangulates: the new (verts, tris), or None when no sample is more
    than ``sample_max_error`` off."""
    best = int(d.argmax())
    bestd = d[best]
    if not bestd > 0 or bestd <= F32(sample_max_error):
        return None
    added[best] = True
    jx, jy, jz = samples
    verts = np.concatenate([verts, np.array([[jx[best], jy[best], jz[best]]], dtype=F32)])
    return verts, _delaunay_hull(verts[:, 0], verts[:, 2], hull, cache)


def _grow_poly_details(polygons, sample_max_error) -> None:
    """`_grow_poly_detail` of several polygons in lockstep, in place: ``polygons`` is a list
    of [verts, tris, hull, samples, added, done, cache] (as `_grow_poly_detail` takes them;
    verts and tris are replaced as the polygon grows). Needs `CACHE_GAPS`' tables.

    Step k of every polygon still growing runs in round k: the gap rows of the triangles new
    since each one's last step (`_TriangleGaps`' table, one per polygon) are computed for all
    of them in one pass over (triangle, sample) pairs (`_height_gap_terms`, the same float32
    values), then each polygon takes its worst sample and re-triangulates (Delaunay, per
    polygon). One polygon alone pays some 25 NumPy calls per step for its new rows; here
    a round pays them once."""
    gaps = [_TriangleGaps(poly[3]) for poly in polygons]
    steps = [poly[5] for poly in polygons]
    active = list(range(len(polygons)))
    while active:
        active = [
            i for i in active
            if steps[i] < polygons[i][3][0].size and polygons[i][0].shape[0] < MAX_VERTS
            and polygons[i][1]
        ]  # fmt: skip
        if not active:
            break
        # Every active polygon's new triangles; their gap rows at once.
        news = []
        for i in active:
            keys, new = gaps[i].pending(polygons[i][1])
            polygons[i][1] = keys
            if new:
                news.append((i, new))
        if news:
            corners = np.concatenate(
                [polygons[i][0].take(np.array(new, dtype=np.int64), axis=0) for i, new in news]
            )
            terms = _triangle_terms(corners[:, 0], corners[:, 1], corners[:, 2])
            n_new = np.array([len(new) for _, new in news], dtype=np.int64)
            n_samples = np.array([gaps[i].jx.size for i, _ in news], dtype=np.int64)
            # Pairs triangle-major: each new triangle against its polygon's samples.
            per_tri = n_samples.repeat(n_new)
            pair_tri = np.arange(per_tri.size).repeat(per_tri)
            sample_first = np.cumsum(n_samples) - n_samples
            tri_first = np.cumsum(per_tri) - per_tri
            pair_sample = sample_first.repeat(n_new).repeat(per_tri) + (
                np.arange(pair_tri.size) - tri_first.repeat(per_tri)
            )
            jx = np.concatenate([gaps[i].jx for i, _ in news])
            jy = np.concatenate([gaps[i].jy for i, _ in news])
            jz = np.concatenate([gaps[i].jz for i, _ in news])
            gap = _height_gap_terms(
                jx.take(pair_sample), jy.take(pair_sample), jz.take(pair_sample),
                terms.take(pair_tri, axis=0),
            )  # fmt: skip
            at = 0
            for (i, new), m, ns in zip(news, n_new.tolist(), n_samples.tolist(), strict=True):
                gaps[i].store(new, gap[at : at + m * ns].reshape(m, ns))
                at += m * ns
        for i in active:
            verts, keys, hull, samples, added, _done, cache = polygons[i]
            dmin = gaps[i].smallest(keys)
            steps[i] += 1
            d = np.where(added | (dmin == _F32_FLT_MAX), F32(0), dmin)
            grown = _insert_worst(verts, d, hull, samples, added, cache, sample_max_error)
            if grown is None:
                steps[i] = samples[0].size  # done
            else:
                polygons[i][0], polygons[i][1] = grown


#: Most (sample, triangle) pairs whose height gaps one batch of `_details_with_samples` holds
#: (about 120 bytes each while they are measured).
GAP_PAIRS_PER_BATCH = 1 << 18
#: Fewest growing polygons for which a round of `_details_with_samples` beats finishing them
#: one by one (measured on the shared meshes).
ROUNDS_MIN_POLYGONS = 8
#: Polygons with more (sample, triangle) pairs than this finish one by one, where broadcasting
#: costs less per pair than the rounds' gathered pairs.
ROUND_MAX_PAIRS = 1024
#: With a build context's executor: the least estimated insertion work (`_insert_work`) sent to
#: it (below, shipping the polygons costs more than it saves; measured on the shared meshes).
POOL_MIN_WORK = 40_000
#: Pieces the growing polygons are split into for the executor (it balances them over workers).
POOL_PIECES = 8


def _largest_gaps(jobs, sample_max_error):
    """One round of Recast's sample insertion for several polygons at once: for each job
    (verts float32 (n, 3), tris list of [a, b, c], samples (jx, jy, jz), added bool (s,)), the
    sample with the largest height gap over the current triangles (distToTriMesh; samples
    already added or over no triangle count 0, ties: the first) and that gap. Returns int64
    (jobs,) sample index and float32 (jobs,) gap. Equal to `_build_poly_detail`'s step."""
    ns = np.array([job[2][0].size for job in jobs], dtype=np.int64)
    nt = np.array([len(job[1]) for job in jobs], dtype=np.int64)
    sx = np.concatenate([job[2][0] for job in jobs])
    sy = np.concatenate([job[2][1] for job in jobs])
    sz = np.concatenate([job[2][2] for job in jobs])
    added = np.concatenate([job[3] for job in jobs])
    corners = np.concatenate(
        [job[0].take(np.asarray(job[1], dtype=np.int64), axis=0) for job in jobs]
    )
    terms = _triangle_terms(corners[:, 0], corners[:, 1], corners[:, 2])
    sample_job = np.repeat(np.arange(len(jobs)), ns)
    tri_first = np.zeros(len(jobs), dtype=np.int64)
    np.cumsum(nt[:-1], out=tri_first[1:])
    # Pairs sample-major: sample k's pairs are its polygon's triangles, in order.
    per_sample = nt[sample_job]
    pair_first = np.zeros(sx.size, dtype=np.int64)
    np.cumsum(per_sample[:-1], out=pair_first[1:])
    pair_sample = np.repeat(np.arange(sx.size), per_sample)
    pair_tri = (
        tri_first[sample_job][pair_sample] + np.arange(pair_sample.size) - pair_first[pair_sample]
    )
    gap = _height_gap_terms(
        sx[pair_sample], sy[pair_sample], sz[pair_sample], terms.take(pair_tri, axis=0)
    )
    del pair_tri, pair_sample
    d = np.minimum.reduceat(gap, pair_first)
    d = np.where(d == _F32_FLT_MAX, F32(-1), d)
    d = np.where(added | (d < 0), F32(0), d)
    sample_first = np.zeros(len(jobs), dtype=np.int64)
    np.cumsum(ns[:-1], out=sample_first[1:])
    best_gap = np.maximum.reduceat(d, sample_first)
    at = np.flatnonzero(d == best_gap[sample_job])
    _, first = np.unique(sample_job[at], return_index=True)
    return at[first] - sample_first, best_gap


def _collector_paused(function):
    """``function`` run with Python's cyclic garbage collector off (back on after, if it was).

    The insertion rounds allocate hundreds of thousands of small lists, tuples and dicts (the
    Delaunay edges and the scan caches), which reference counting frees; the collector would
    still scan them every few hundred allocations, and in each full collection every object of
    the process (in Blender, all of its Python state). Undulating's detail stage: 778 -> 696 ms.
    Several threads may pause it at once: whoever found it on turns it back on."""

    @functools.wraps(function)
    def paused(*args, **kwargs):
        was_on = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    return paused


@_collector_paused
def _details_with_samples(items, sample_max_error):
    """`_build_poly_detail` for many polygons, their insertion steps in rounds: each round
    measures every still-growing polygon's samples against its triangles at once (the same
    float32 values as one polygon at a time), then adds each one's worst sample and
    re-triangulates it (Delaunay, sequential per polygon). ``items``: (verts, hull, nin,
    interior, samples) per polygon, as `_build_poly_detail` takes them. Returns (verts,
    [[a, b, c, flags]]) per item, equal to `_build_poly_detail`'s."""
    count = len(items)
    nh = np.array([len(item[1]) for item in items], dtype=np.int64)
    hstart = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(nh, out=hstart[1:])
    hull_ids = np.concatenate([np.asarray(item[1], dtype=np.int64) for item in items])
    hull_pts = np.concatenate([item[0][item[1]] for item in items])
    nin = np.array([item[2] for item in items], dtype=np.int64)
    first_tris, tstart = _triangulate_hulls(hull_pts[:, 0], hull_pts[:, 2], hull_ids, hstart, nin)
    verts = [item[0] for item in items]
    tris = [first_tris[tstart[i] : tstart[i + 1]].tolist() for i in range(count)]
    sampled = [False] * count
    added = [None] * count
    rounds = [0] * count
    caches: list[dict] = [{} for _ in range(count)]
    #: The last round's `_fold_scans` of the polygons that grew in it.
    scans: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    active = []
    solo: list[int] = []
    for i, (_, _, _, interior, samples) in enumerate(items):
        if interior and tris[i] and samples[0].size:
            sampled[i] = True
            added[i] = np.zeros(samples[0].size, dtype=bool)
            active.append(i)
    while active:
        active = [
            i for i in active
            if rounds[i] < items[i][4][0].size and verts[i].shape[0] < MAX_VERTS and tris[i]
        ]  # fmt: skip
        # Polygons outgrowing the fold tables, or with many pairs, finish alone (one polygon's
        # Delaunay steps in a row reuse its caches while they are hot).
        large = {
            i for i in active
            if items[i][4][0].size * len(tris[i]) > ROUND_MAX_PAIRS
            or verts[i].shape[0] >= FOLD_TABLE_MAX_POINTS
        }  # fmt: skip
        solo.extend(i for i in active if i in large)
        _seed_settled_scans([i for i in active if i in large], verts, scans, caches)
        active = [i for i in active if i not in large]
        if len(active) < ROUNDS_MIN_POLYGONS:
            _seed_settled_scans(active, verts, scans, caches)
            break
        growing = []
        batch: list[int] = []
        pairs = 0
        for pos, i in enumerate(active):
            batch.append(i)
            pairs += items[i][4][0].size * len(tris[i])
            if pairs < GAP_PAIRS_PER_BATCH and pos + 1 < len(active):
                continue
            jobs = [(verts[j], tris[j], items[j][4], added[j]) for j in batch]
            best, gap = _largest_gaps(jobs, sample_max_error)
            for j, b, g in zip(batch, best.tolist(), gap.tolist(), strict=True):
                rounds[j] += 1
                if not g > 0 or g <= sample_max_error:
                    continue
                added[j][b] = True
                jx, jy, jz = items[j][4]
                verts[j] = np.concatenate([verts[j], np.array([[jx[b], jy[b], jz[b]]], dtype=F32)])
                growing.append(j)
            batch, pairs = [], 0
        # Re-triangulate the grown polygons; the small ones read their scans from tables
        # built for all of them at once.
        # By size, so that a batch's tables (padded to its largest set) waste little.
        small = sorted(
            (j for j in growing if verts[j].shape[0] <= FOLD_TABLE_MAX_POINTS),
            key=lambda j: verts[j].shape[0],
        )
        folds: dict[int, list] = {}
        if BATCH_FOLDS:
            # A polygon scanned last round has one point more: its scans are extended.
            extended = {j for j in small if j in scans and len(scans[j][0]) + 1 == len(verts[j])}
            grown = [j for j in small if j in extended]
            fresh = [j for j in small if j not in extended]
            for group, extend in ((fresh, False), (grown, True)):
                for lo in range(0, len(group), FOLD_TABLES_PER_BATCH):
                    part = group[lo : lo + FOLD_TABLES_PER_BATCH]
                    sets = [(verts[j][:, 0], verts[j][:, 2]) for j in part]
                    if extend:
                        found = _fold_scans_grown(sets, [scans[j] for j in part])
                    else:
                        found = _fold_scans(sets)
                    scans.update(zip(part, found, strict=True))
            scans = {j: scans[j] for j in small}
            folds = {j: _fold_list(scans[j]) for j in small}
        for j in growing:
            tris[j] = _delaunay_hull(
                verts[j][:, 0], verts[j][:, 2], items[j][1], caches[j], folds.get(j)
            )
        active = growing
    # Large polygons and the last few growing ones finish in lockstep (or one by one).
    finishing = sorted(solo + active)
    if LOCKSTEP_FINISH and CACHE_GAPS:
        together = [i for i in finishing if items[i][4][0].size <= LOCKSTEP_MAX_SAMPLES]
        polygons = [
            [verts[i], tris[i], items[i][1], items[i][4], added[i], rounds[i], caches[i]]
            for i in together
        ]
        _grow_poly_details(polygons, sample_max_error)
        for i, poly in zip(together, polygons, strict=True):
            verts[i], tris[i] = poly[0], poly[1]
        finishing = [i for i in finishing if items[i][4][0].size > LOCKSTEP_MAX_SAMPLES]
    for i in finishing:
        verts[i], tris[i] = _grow_poly_detail(
            verts[i], tris[i], items[i][1], items[i][4], added[i], rounds[i], caches[i],
            sample_max_error,
        )  # fmt: skip
    out = []
    for i, item in enumerate(items):
        t = tris[i][:MAX_TRIS] if sampled[i] else tris[i]
        out.append((verts[i], _tri_flags(t, item[1])))
    return out


def _seed_settled_scans(polygons, verts, scans, caches) -> None:
    """Give the polygons leaving the rounds for `_grow_poly_detail` their last round's
    `_fold_scans` as settled scans (the scans that met no point on a circle, as
    `_delaunay_hull` keeps them in its cache under "pure"): their next Delaunay extends them
    by its new point (`_extend_pure_scans`) instead of scanning every pair afresh, as it
    would after rounds that read their scans from tables. Only where the scans are of the
    polygon's current points."""
    if not SEED_SETTLED_SCANS:
        return
    for i in polygons:
        scan = scans.get(i)
        n = verts[i].shape[0]
        if scan is None or scan[0].shape[0] != n:
            continue
        pt, on_circle = scan
        s, t = np.nonzero(~on_circle & ~np.eye(n, dtype=bool))
        keys = (s << _PAIR_SHIFT | t).tolist()
        caches[i]["pure"] = (n, dict(zip(keys, pt[s, t].tolist(), strict=True)))


def _insert_work(items) -> np.ndarray | int:
    """Estimated work of the sample insertion per item (samples x points, as the gaps and the
    Delaunay steps grow): an int64 array, 0 for none."""
    if not items:
        return 0
    ns = np.array([0 if item[4] is None else item[4][0].size for item in items], dtype=np.int64)
    nv = np.array([item[0].shape[0] for item in items], dtype=np.int64)
    return int((ns * (nv + ns)).sum())


def _details_in_pool(executor, items, sample_max_error):
    """`_details_with_samples` split over ``executor`` in `POOL_PIECES` pieces of about equal
    work (greedy, largest first); each polygon is independent, so the result is the same."""
    ns = np.array([0 if item[4] is None else item[4][0].size for item in items], dtype=np.int64)
    nv = np.array([item[0].shape[0] for item in items], dtype=np.int64)
    work = ns * (nv + ns) + 1
    load = np.zeros(min(POOL_PIECES, len(items)), dtype=np.int64)
    piece = np.empty(len(items), dtype=np.int64)
    for i in np.argsort(-work, kind="stable").tolist():
        k = int(np.argmin(load))
        piece[i] = k
        load[k] += work[i]
    members = [np.flatnonzero(piece == k).tolist() for k in range(load.size)]
    futures = [
        executor.submit(_details_with_samples, [items[i] for i in ids], sample_max_error)
        for ids in members
    ]
    built: list = [None] * len(items)
    for ids, future in zip(members, futures, strict=True):
        for i, one in zip(ids, future.result(), strict=True):
            built[i] = one
    return built


def _interior_samples(pv, npoly, polys, sample_dist, patches, cs):
    """Grid samples inside polygons ``polys`` (Recast's interior sampling, all at once).

    ``pv`` float32 (P, nvp, 3) local polygon vertices, padded. Returns (start int64
    (len(polys)+1,), jx, jy, jz float32): samples of polys[k] are ``start[k]:start[k+1]``,
    jittered as Recast, heights [wu] from the patches.
    """
    sd = F32(sample_dist)
    sub = pv[polys]
    n = npoly[polys]
    valid = np.arange(pv.shape[1])[None, :] < n[:, None]
    big = F32(np.inf)
    bmin = np.where(valid[:, :, None], sub, big).min(axis=1)
    bmax = np.where(valid[:, :, None], sub, -big).max(axis=1)
    x0 = np.floor(bmin[:, 0] / sd).astype(np.int64)
    x1 = np.ceil(bmax[:, 0] / sd).astype(np.int64)
    z0 = np.floor(bmin[:, 2] / sd).astype(np.int64)
    z1 = np.ceil(bmax[:, 2] / sd).astype(np.int64)
    wx = np.maximum(x1 - x0, 0)
    cnt = wx * np.maximum(z1 - z0, 0)
    gp = np.repeat(np.arange(polys.size), cnt)
    off = np.zeros(polys.size + 1, dtype=np.int64)
    np.cumsum(cnt, out=off[1:])
    local = np.arange(gp.size, dtype=np.int64) - off[gp]
    wg = np.maximum(wx[gp], 1)
    gx = x0[gp] + local % wg
    gz = z0[gp] + local // wg
    ptx = gx.astype(F32) * sd
    ptz = gz.astype(F32) * sd
    pty = ((bmax[:, 1] + bmin[:, 1]) * F32(0.5))[gp]
    # distToPoly: crossing parity and distance to the nearest edge, edge by edge.
    inside = np.zeros(gp.size, dtype=bool)
    dmin = np.full(gp.size, _F32_FLT_MAX, dtype=F32)
    ng = n[gp]
    # Each sample's polygon vertices by one flat gather per coordinate.
    nvp = pv.shape[1]
    sub_x = np.ascontiguousarray(sub[:, :, 0]).ravel()
    sub_z = np.ascontiguousarray(sub[:, :, 2]).ravel()
    row = gp * nvp
    for k in range(nvp):
        on = k < ng
        at_i = row + np.minimum(k, ng - 1)
        at_j = row + (k - 1) % np.maximum(ng, 1)
        vix, viz, vjx, vjz = sub_x.take(at_i), sub_z.take(at_i), sub_x.take(at_j), sub_z.take(at_j)
        straddle = (viz > ptz) != (vjz > ptz)
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = (vjx - vix) * (ptz - viz) / (vjz - viz) + vix
        inside ^= on & straddle & (ptx < xc)
        dk = _dist_pt_seg2d_sq(ptx, ptz, vjx, vjz, vix, viz)
        dmin = np.where(on, np.minimum(dmin, dk), dmin)
    dist = np.where(inside, -dmin, dmin)
    keep = np.flatnonzero(dist <= -sd / F32(2))
    gp, gx, gz, ptx, ptz, pty = gp[keep], gx[keep], gz[keep], ptx[keep], ptz[keep], pty[keep]
    gh = patches.height(polys[gp], ptx, pty, ptz)
    start = np.zeros(polys.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(gp, minlength=polys.size), out=start[1:])
    si = np.arange(gp.size, dtype=np.int64) - start[gp]
    jx = gx.astype(F32) * sd + _jitter(si, 0x8DA6B343) * F32(cs) * F32(0.1)
    jz = gz.astype(F32) * sd + _jitter(si, 0xD8163841) * F32(cs) * F32(0.1)
    jy = gh.astype(F32) * patches.ch
    return start, jx, jy, jz


# ----------------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------------


def patch_chunks(sizes, budget: int | None = None) -> list[tuple[int, int]]:
    """Consecutive polygon ranges [lo, hi) whose patch sizes (int (npolys,) cells) sum to at
    most ``budget`` (`PATCH_CELLS_PER_CHUNK`, read at call time); a polygon larger than the
    budget gets a range of its own. [Units: cells]"""
    budget = PATCH_CELLS_PER_CHUNK if budget is None else int(budget)
    sizes = np.asarray(sizes, dtype=np.int64)
    ranges = []
    lo = 0
    n = sizes.shape[0]
    ends = np.cumsum(sizes)
    while lo < n:
        before = int(ends[lo - 1]) if lo else 0
        hi = int(np.searchsorted(ends, before + budget, side="right"))
        hi = max(hi, lo + 1)
        ranges.append((lo, hi))
        lo = hi
    return ranges


def _edge_samples_of(lo, hi, e_p, e_k, edge_base, pv, npoly, sd, patches, sample_max_error):
    """Sample the edges of polygons [lo, hi) (Recast: per polygon, edge i from vertex i-1 to
    i) on ``patches`` (of those polygons, indexed from lo). Returns (counts int64, points
    float32 (sum counts, 3)) for the polygons' edges in order: each edge's kept points, in
    the polygon's edge direction, one edge after the other."""
    e0, e1 = int(edge_base[lo]), int(edge_base[hi])
    ep, ek = e_p[e0:e1], e_k[e0:e1]
    vi_ = pv[ep, ek]
    vj_ = pv[ep, (ek - 1) % npoly[ep]]
    same_x = np.abs(vj_[:, 0] - vi_[:, 0]) < F32(1e-6)
    swapped = np.where(same_x, vj_[:, 2] > vi_[:, 2], vj_[:, 0] > vi_[:, 0])
    ea = np.where(swapped[:, None], vi_, vj_)
    eb = np.where(swapped[:, None], vj_, vi_)
    dx, dz = eb[:, 0] - ea[:, 0], eb[:, 2] - ea[:, 2]
    d = np.sqrt(dx * dx + dz * dz)
    nn = np.minimum(1 + np.floor(d / sd).astype(np.int64), MAX_VERTS_PER_EDGE - 1)
    local_p = ep - lo

    def run(sel, nn_sel):
        # The kept points of edges ``sel`` (ascending) in the polygon's edge direction (a
        # swapped edge's run back to front), with their counts.
        pts, start = _sample_edges(
            local_p[sel], ea[sel, 0], ea[sel, 1], ea[sel, 2], eb[sel, 0], eb[sel, 1],
            eb[sel, 2], nn_sel, patches, sample_max_error,
        )  # fmt: skip
        counts = np.diff(start)
        edge = np.repeat(np.arange(sel.size), counts)
        at = np.arange(pts.shape[0])
        flip = swapped[sel][edge]
        at[flip] = (start[edge] + start[edge + 1] - 1 - at)[flip]
        return counts, pts[at]

    counts = np.zeros(e1 - e0, dtype=np.int64)
    # Polygons whose samples could reach MAX_VERTS go edge by edge, as Recast caps them.
    risky = npoly[lo:hi] + np.bincount(local_p, weights=nn, minlength=hi - lo) >= MAX_VERTS
    fast = np.flatnonzero(~risky[local_p])
    fast_points = np.zeros((0, 3), dtype=F32)
    if fast.size:
        counts[fast], fast_points = run(fast, nn[fast])
    alone: dict[int, np.ndarray] = {}
    for p in (np.flatnonzero(risky) + lo).tolist():
        nverts = int(npoly[p])
        for e in range(int(edge_base[p]) - e0, int(edge_base[p + 1]) - e0):
            c = int(nn[e])
            if nverts + c >= MAX_VERTS:
                c = max(1, MAX_VERTS - 1 - nverts)
            counts[e : e + 1], alone[e] = run(np.array([e]), np.array([c], dtype=np.int64))
            nverts += alone[e].shape[0]
    if not alone:
        return counts, fast_points
    first = np.cumsum(counts) - counts
    points = np.empty((int(counts.sum()), 3), dtype=F32)
    fast_counts = counts[fast]
    points[
        np.repeat(first[fast] - (np.cumsum(fast_counts) - fast_counts), fast_counts)
        + np.arange(fast_points.shape[0])
    ] = fast_points  # fmt: skip
    for e, seg in alone.items():
        points[first[e] : first[e] + seg.shape[0]] = seg
    return counts, points


def _simple_details(
    polys, npoly, pv, e_p, m_edge, edge_base, kept, vbase, tbase, sampled, verts, tris
):
    """Detail meshes of the polygons ``polys`` (int64, ascending) that get no interior samples:
    their vertices (the polygon's, then each edge's kept samples in edge order) and Recast's
    hull triangulation with its edge flags, written into ``verts`` (local float32 rows from
    ``vbase[p]``) and ``tris`` (int64 rows from ``tbase[p]``: a, b, c, flags). ``kept``:
    (points, start): edge e's kept samples are points[start[e] : start[e] + m_edge[e]].
    ``sampled``: edges were sampled (else Recast's hull is the polygon in vertex order, issue
    #650)."""
    n = npoly[polys]
    nv = vbase[polys + 1] - vbase[polys]
    # Vertices: the polygon's own, then the edge samples in edge order.
    owner_v = np.repeat(np.arange(polys.size), n)
    k_v = np.arange(owner_v.size) - np.repeat(np.cumsum(n) - n, n)
    verts[vbase[polys][owner_v] + k_v] = pv[polys[owner_v], k_v]
    if sampled:
        edges = np.flatnonzero(np.isin(e_p, polys))  # every edge of the polygons, in order
        m = m_edge[edges]
        poly_of_edge = e_p[edges]
        # Samples of the polygon's earlier edges: where this edge's samples start.
        edge_first = np.cumsum(m) - m
        before = edge_first - edge_first[np.searchsorted(edges, edge_base[poly_of_edge])]
        if int(m.sum()):
            kept_points, kept_start = kept
            within = np.arange(int(m.sum())) - np.repeat(edge_first, m)
            samples = kept_points[np.repeat(kept_start[edges], m) + within]
            rows = np.repeat(vbase[poly_of_edge] + npoly[poly_of_edge] + before, m)
            verts[rows + within] = samples
        # The hull: per edge k, vertex k - 1, then edge k's samples.
        group = 1 + m
        owner_h = np.repeat(np.searchsorted(polys, poly_of_edge), group)
        in_group = np.arange(int(group.sum())) - np.repeat(np.cumsum(group) - group, group)
        n_h = n[owner_h]
        k_h = np.repeat(edges - edge_base[poly_of_edge], group)
        sample_ids = n_h + np.repeat(before, group) + in_group - 1
        hull_ids = np.where(in_group == 0, (k_h - 1) % n_h, sample_ids)
    else:  # no edge samples: Recast's hull is the polygon in vertex order
        owner_h = owner_v
        hull_ids = k_v
    hstart = np.concatenate([[0], np.cumsum(nv)])
    rows_v = vbase[polys][owner_h] + hull_ids
    hx, hz = verts[rows_v, 0], verts[rows_v, 2]
    tri_ids, tstart = _triangulate_hulls(hx, hz, hull_ids, hstart, n)
    # Edge flags: an edge of consecutive hull points is on the outline.
    pos = np.empty(hull_ids.size, dtype=np.int64)
    pos[hstart[owner_h] + hull_ids] = np.arange(hull_ids.size) - hstart[owner_h]
    owner_t = np.repeat(np.arange(polys.size), np.diff(tstart))
    hp = pos[hstart[owner_t][:, None] + tri_ids]
    nh_t = nv[owner_t][:, None]
    on = hp[:, [1, 2, 0]] == (hp + 1) % nh_t
    flags = on[:, 0] | (on[:, 1] << 2) | (on[:, 2] << 4)
    rows_t = tbase[polys][owner_t] + (np.arange(owner_t.size) - tstart[owner_t])
    tris[rows_t, :3] = tri_ids
    tris[rows_t, 3] = flags


def _adds_no_sample(
    polys,
    npoly,
    pv,
    e_p,
    m_edge,
    edge_base,
    kept,
    nv_poly,
    slot,
    istart,
    jx,
    jy,
    jz,
    sample_max_error,
) -> np.ndarray:
    """bool per polygon of ``polys`` (all with interior samples): `_build_poly_detail` would add
    no sample, so its detail mesh is its hull triangulation. That is so when it has no sample,
    already `MAX_VERTS` vertices, or no sample lies above the hull triangulation by more than
    ``sample_max_error`` (Recast's first distToTriMesh check, here for every polygon's every
    sample against its own triangles at once, float32 as `_dist_to_tri_mesh`)."""
    nv = nv_poly[polys]
    vbase = np.concatenate([[0], np.cumsum(nv)])
    tbase = np.concatenate([[0], np.cumsum(nv - 2)])
    verts = np.empty((int(vbase[-1]), 3), dtype=F32)
    tris = np.empty((int(tbase[-1]), 4), dtype=np.int64)
    at = np.arange(polys.size)
    sel_e_p, sel_edge_base, edges = _edges_of(polys, e_p, edge_base)
    _simple_details(
        at, npoly[polys], pv[polys], sel_e_p, m_edge[edges], sel_edge_base,
        (kept[0], kept[1][edges]), vbase, tbase, True, verts, tris,
    )  # fmt: skip
    lo = istart[slot[polys]]
    ns = istart[slot[polys] + 1] - lo
    nt = nv - 2
    # Pairs (sample, triangle) of one polygon, `NO_SAMPLE_PAIR_BLOCK` at a time: all at once
    # held some 200 bytes per pair (undulating at detail_sample_dist 0.9: 1.9 GB at cell_size
    # 0.3, a MemoryError at 0.15). Per sample its least distance (FLT_MAX: no triangle under
    # it, then 0), per polygon the largest of those; a minimum does not depend on how the
    # pairs are split, and the blocks run in order.
    pair_n = ns * nt
    pair_end = np.cumsum(pair_n)
    total = int(pair_end[-1]) if pair_end.size else 0
    per_sample = np.full(jx.shape[0], _F32_FLT_MAX, dtype=F32)
    for first in range(0, total, NO_SAMPLE_PAIR_BLOCK):
        pair = np.arange(first, min(first + NO_SAMPLE_PAIR_BLOCK, total), dtype=np.int64)
        owner = np.searchsorted(pair_end, pair, side="right")
        within = pair - (pair_end[owner] - pair_n[owner])
        sample = lo[owner] + within // nt[owner]
        tri = tbase[owner] + within % nt[owner]
        base = vbase[owner]
        a = verts.take(base + tris[tri, 0], axis=0)
        b = verts.take(base + tris[tri, 1], axis=0)
        c = verts.take(base + tris[tri, 2], axis=0)
        d = _height_gap(jx[sample], jy[sample], jz[sample], a, b, c)
        np.minimum.at(per_sample, sample, d)
    per_sample[per_sample == _F32_FLT_MAX] = F32(0)
    best = np.zeros(polys.size, dtype=F32)
    has = ns > 0
    sample_owner = np.repeat(at, ns)
    rows = lo[sample_owner] + (np.arange(int(ns.sum())) - np.repeat(np.cumsum(ns) - ns, ns))
    np.maximum.at(best, sample_owner, per_sample[rows])
    adds = has & (nv < MAX_VERTS) & (best > F32(0)) & (best > F32(sample_max_error))
    return ~adds


def _edges_of(polys, e_p, edge_base):
    """The edges of the polygons ``polys``, as `_simple_details` takes them for that selection
    (polygons renumbered 0..len - 1): (owner per edge, edge offsets, the edges' global ids)."""
    counts = edge_base[polys + 1] - edge_base[polys]
    edges = np.repeat(edge_base[polys], counts) + (
        np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    )
    sel_base = np.concatenate([[0], np.cumsum(counts)])
    return np.repeat(np.arange(polys.size), counts), sel_base, edges


def _join_samples(parts):
    """Concatenate `_interior_samples` results of consecutive polygon chunks."""
    if not parts:
        empty = np.zeros(0, dtype=F32)
        return np.zeros(1, dtype=np.int64), empty, empty, empty
    starts = [parts[0][0]]
    total = int(parts[0][0][-1])
    for istart, *_ in parts[1:]:
        starts.append(istart[1:] + total)
        total += int(istart[-1])
    return (
        np.concatenate(starts),
        *(np.concatenate([p[k] for p in parts]) for k in (1, 2, 3)),
    )


def _check(pmesh, chf):
    try:
        verts = np.asarray(pmesh.verts)
        polys = np.asarray(pmesh.polys)
        nvp = int(pmesh.nvp)
        regs = np.asarray(pmesh.regs)
    except AttributeError as exc:
        raise VoxNavError(f"pmesh lacks a polygon mesh field: {exc}") from None
    if verts.ndim != 2 or verts.shape[1] != 3:
        raise VoxNavError(f"pmesh.verts must have shape (n, 3), got {verts.shape}")
    if not 3 <= nvp:
        raise VoxNavError(f"pmesh.nvp must be at least 3, got {nvp}")
    if polys.ndim != 2 or polys.shape[1] != 2 * nvp:
        raise VoxNavError(f"pmesh.polys must have shape (npolys, {2 * nvp}), got {polys.shape}")
    if regs.shape != (polys.shape[0],):
        raise VoxNavError(f"pmesh.regs must have shape ({polys.shape[0]},), got {regs.shape}")
    if getattr(chf, "reg", None) is None:
        raise VoxNavError("the compact heightfield has no regions: build regions first")
    return verts, polys, nvp, regs


class _MeshPolygons(NamedTuple):
    """One polygon mesh's polygons as `build_poly_mesh_details` reads them: vertices int64
    (n, 3) [Units: cells], vertex ids int64 (npolys, nvp), vertex counts (npolys,), regions
    (npolys,); ``npolys`` 0 when there is nothing to build (no vertices or no polygons)."""

    vi: np.ndarray
    pidx: np.ndarray
    npoly: np.ndarray
    regs: np.ndarray
    polys: np.ndarray
    nvp: int
    npolys: int


def _mesh_polygons(pmesh, chf) -> _MeshPolygons:
    verts_u16, polys, nvp, regs = _check(pmesh, chf)
    npolys = polys.shape[0]
    if verts_u16.shape[0] == 0 or npolys == 0:
        none = np.zeros((0, nvp), dtype=np.int64)
        return _MeshPolygons(none, none, none[:, 0], none[:, 0], polys, nvp, 0)
    vi = verts_u16.astype(np.int64)
    pidx = polys[:, :nvp].astype(np.int64)
    valid = pidx != MESH_NULL_IDX
    # Recast stops at the first null index.
    npoly = np.argmin(np.concatenate([valid, np.zeros((npolys, 1), bool)], axis=1), axis=1)
    if (npoly < 3).any():
        bad = int(np.flatnonzero(npoly < 3)[0])
        raise VoxNavError(f"polygon {bad} has fewer than 3 vertices")
    if int(pidx[valid].max()) >= verts_u16.shape[0]:
        raise VoxNavError("pmesh.polys refers to a vertex index beyond pmesh.verts")
    # The ids past a polygon's last vertex are never read (`pcols` masks them).
    return _MeshPolygons(vi, pidx, npoly, regs, polys, nvp, npolys)


def _empty_detail(npolys: int) -> PolyMeshDetail:
    return PolyMeshDetail(
        np.zeros((npolys, 4), dtype=np.uint32),
        np.zeros((0, 3), dtype=F32),
        np.zeros((0, 4), dtype=np.uint8),
    )


def detail_frame(pmesh) -> tuple:
    """What a polygon mesh's detail mesh reads besides its polygons and regions: its bmin,
    cs, ch, border_size, nvp and max_edge_error (as the stage reads them, float32). Meshes
    with equal frames (and one compact heightfield layout) can be built together
    (`build_poly_mesh_details`)."""
    return (
        tuple(np.asarray(pmesh.bmin, dtype=F32).reshape(3).tolist()),
        float(F32(pmesh.cs)), float(F32(pmesh.ch)), int(getattr(pmesh, "border_size", 0)),
        int(pmesh.nvp), float(F32(getattr(pmesh, "max_edge_error", 0.0))),
    )  # fmt: skip


def _check_same_frame(pmeshes, chfs) -> None:
    """Refuse meshes `build_poly_mesh_details` cannot build together (a caller's mistake)."""
    first, chf = pmeshes[0], chfs[0]
    for pmesh, other in zip(pmeshes[1:], chfs[1:], strict=True):
        if detail_frame(pmesh) != detail_frame(first):
            raise VoxNavError(
                "polygon meshes built together need the same bmin, cs, ch, border_size, nvp "
                "and max_edge_error"
            )
        for name in ("cell_start", "y", "neighbor"):
            mine, theirs = getattr(chf, name), getattr(other, name)
            if mine is not theirs and not np.array_equal(mine, theirs):
                raise VoxNavError(
                    f"compact heightfields built together must share their layout ({name})"
                )


def build_poly_mesh_detail(
    pmesh,
    chf,
    sample_dist: float,
    sample_max_error: float,
    *,
    progress=None,
    ctx: BuildContext | None = None,
) -> PolyMeshDetail:
    """Recast's rcBuildPolyMeshDetail: a detail triangle mesh per polygon of ``pmesh``.

    Parameters
    ----------
    pmesh:
        Polygon mesh with Recast's fields (see the module docstring); not modified.
    chf:
        The `CompactHeightfield` (with ``reg``) the polygon mesh was built from.
    sample_dist:
        Spacing of height samples along edges and inside polygons; 0 = no samples (the detail
        mesh only triangulates the polygons). [Units: wu] [Limit: >= 0] Recast's
        ``detailSampleDist`` (RecastDemo: cell_size * 6, or 0 when the setting is below 0.9).
    sample_max_error:
        Largest height error the detail mesh may keep against the samples. [Units: wu]
        [Limit: >= 0] (RecastDemo: cell_height * 1).
    progress:
        Optional callable ``progress(fraction: float, message: str)``.

    Returns
    -------
    PolyMeshDetail with ``meshes`` uint32 (npolys, 4), ``verts`` float32 (n, 3) world Z-up,
    ``tris`` uint8 (m, 4). Vertex heights are raised by one cell height, as Recast does.
    """
    return build_poly_mesh_details(
        [pmesh], [chf], sample_dist, sample_max_error, progress=progress, ctx=ctx
    )[0]


def build_poly_mesh_details(
    pmeshes,
    chfs,
    sample_dist: float,
    sample_max_error: float,
    *,
    progress=None,
    ctx: BuildContext | None = None,
) -> list[PolyMeshDetail]:
    """`build_poly_mesh_detail` of several polygon meshes at once, each with the compact
    heightfield it was built from; each result equals that mesh's detail mesh built alone.

    The heightfields share one layout and differ only in their regions (several agents'
    copies of one compact heightfield, `core.agents`): the same ``cell_start``, ``y`` and
    ``neighbor`` arrays, and the meshes the same frame (bmin, cs, ch, border_size), nvp and
    max_edge_error. Each polygon's detail depends on that polygon alone, so all the meshes'
    polygons go through every step together (the patch flood, the samples, the Delaunay
    insertions) and each step's per-call work is paid once, not once per mesh. Arguments and
    limits as `build_poly_mesh_detail`. Working memory: as one mesh holding all the polygons.
    """
    t0 = time.perf_counter()
    if len(pmeshes) != len(chfs) or not pmeshes:
        raise VoxNavError("build_poly_mesh_details takes one compact heightfield per polygon mesh")
    sample_dist = float(F32(sample_dist))
    sample_max_error = float(F32(sample_max_error))
    if not (math.isfinite(sample_dist) and sample_dist >= 0):
        raise VoxNavError(f"sample_dist must be a finite number >= 0, got {sample_dist!r}")
    if not (math.isfinite(sample_max_error) and sample_max_error >= 0):
        raise VoxNavError(
            f"sample_max_error must be a finite number >= 0, got {sample_max_error!r}"
        )
    meshes_in = [_mesh_polygons(pmesh, chf) for pmesh, chf in zip(pmeshes, chfs, strict=True)]
    results: list[PolyMeshDetail | None] = [
        None if mesh.npolys else _empty_detail(mesh.polys.shape[0]) for mesh in meshes_in
    ]
    batch = [i for i, mesh in enumerate(meshes_in) if mesh.npolys]
    if not batch:
        return _all_built(results)
    pmesh, chf = pmeshes[batch[0]], chfs[batch[0]]
    _check_same_frame([pmeshes[i] for i in batch], [chfs[i] for i in batch])
    nvp = meshes_in[batch[0]].nvp
    cs = F32(pmesh.cs)
    ch = F32(pmesh.ch)
    orig = np.asarray(pmesh.bmin, dtype=F32).reshape(3)
    bs = int(getattr(pmesh, "border_size", 0))
    radius = max(1, int(math.ceil(float(F32(getattr(pmesh, "max_edge_error", 0.0))))))
    # The meshes' polygons one after the other, vertex ids shifted past the meshes before;
    # each polygon reads its own mesh's regions (``layer``: where its mesh's region field
    # starts in the joined fields).
    vert_base = np.cumsum([0] + [meshes_in[i].vi.shape[0] for i in batch])
    vi = np.concatenate([meshes_in[i].vi for i in batch])
    pidx = np.concatenate([meshes_in[i].pidx + vert_base[k] for k, i in enumerate(batch)])
    npoly = np.concatenate([meshes_in[i].npoly for i in batch])
    regs = np.concatenate([meshes_in[i].regs for i in batch])
    poly_first = np.cumsum([0] + [meshes_in[i].npolys for i in batch])
    npolys = int(poly_first[-1])
    layer = None
    if len(batch) > 1:
        n_spans = np.int64(chf.y.shape[0])
        layer = np.repeat(np.arange(len(batch), dtype=np.int64) * n_spans, np.diff(poly_first))
    # The region field the polygons read (each mesh's after the ones before, with ``layer``).
    reg_field = np.ascontiguousarray(
        chf.reg if len(batch) == 1 else np.concatenate([chfs[i].reg for i in batch])
    )
    pcols = np.arange(nvp)[None, :] < npoly[:, None]
    safe = np.where(pcols, pidx, 0)
    px_all = np.where(pcols, vi[safe, 0], 0)
    pz_all = np.where(pcols, vi[safe, 2], 0)
    big = np.iinfo(np.int64).max
    xmin = np.maximum(0, np.where(pcols, px_all, big).min(axis=1) - 1)
    xmax = np.minimum(chf.width, np.where(pcols, px_all, -1).max(axis=1) + 1)
    ymin = np.maximum(0, np.where(pcols, pz_all, big).min(axis=1) - 1)
    ymax = np.minimum(chf.height, np.where(pcols, pz_all, -1).max(axis=1) + 1)
    pw = np.maximum(xmax - xmin, 1)
    ph = np.maximum(ymax - ymin, 1)
    vf = np.empty((vi.shape[0], 3), dtype=F32)
    vf[:, 0] = vi[:, 0].astype(F32) * cs
    vf[:, 1] = vi[:, 1].astype(F32) * ch
    vf[:, 2] = vi[:, 2].astype(F32) * cs
    pv = vf.take(safe, axis=0)  # (P, nvp, 3) local polygon vertices, padded with vertex 0
    sd = F32(sample_dist)
    min_extent = _poly_min_extent(pv[:, :, 0], pv[:, :, 2], npoly)
    e_p, e_k = np.nonzero(pcols)
    edge_base = np.zeros(npolys + 1, dtype=np.int64)
    np.cumsum(npoly, out=edge_base[1:])
    slot = np.full(npolys, -1, dtype=np.int64)
    if sample_dist > 0:
        ipolys = np.flatnonzero(~(min_extent < sd * F32(2)))
        slot[ipolys] = np.arange(ipolys.size)
    else:
        ipolys = np.zeros(0, dtype=np.int64)
    # Polygons go through in chunks of at most PATCH_CELLS_PER_CHUNK patch cells (a larger
    # polygon alone): each polygon's patch and samples depend on that polygon only, so the
    # result is the same and the peak no longer grows with the sum of all bounding boxes.
    regs64 = regs.astype(np.int64)
    sizes = pw * ph

    def sample_chunk(lo_hi: tuple[int, int]):
        lo, hi = lo_hi
        if sample_dist <= 0:
            return None
        chunk_layer = None if layer is None else layer[lo:hi]
        patches: _Patches | _LocalHeights
        if LOCAL_HEIGHTS and int(sizes[lo:hi].sum()) >= LOCAL_MIN_CELLS:
            patches = _LocalHeights(
                chf, vi, pidx[lo:hi], npoly[lo:hi], regs64[lo:hi], xmin[lo:hi], ymin[lo:hi],
                pw[lo:hi], ph[lo:hi], bs, F32(1) / F32(chf.cs), radius, reg_field, chunk_layer,
            )  # fmt: skip
        else:
            data, off = _height_patches(
                chf, vi, pidx[lo:hi], npoly[lo:hi], regs64[lo:hi], xmin[lo:hi], ymin[lo:hi],
                pw[lo:hi], ph[lo:hi], bs, reg_field, chunk_layer,
            )  # fmt: skip
            patches = _Patches(
                data, off, xmin[lo:hi], ymin[lo:hi], pw[lo:hi], ph[lo:hi],
                F32(1) / F32(chf.cs), chf.ch, radius,
            )  # fmt: skip
        kept = _edge_samples_of(
            lo, hi, e_p, e_k, edge_base, pv, npoly, sd, patches, sample_max_error
        )
        chunk_ipolys = ipolys[(ipolys >= lo) & (ipolys < hi)]
        interior = _interior_samples(
            pv[lo:hi], npoly[lo:hi], chunk_ipolys - lo, sample_dist, patches, cs
        )
        return kept, interior

    # Chunks sample their own polygons' edges only; on two threads NumPy's share of the work
    # (it runs without the GIL) overlaps. A polygon larger than the budget makes a chunk of
    # its own: then one chunk at a time, so the working memory stays that `core.memory`
    # predicts (the workers' budgets, or one polygon's patch).
    chunks = patch_chunks(sizes)
    fits = int(sizes.max(initial=0)) <= PATCH_CELLS_PER_CHUNK
    workers = LOCAL_WORKERS if LOCAL_HEIGHTS else PATCH_WORKERS
    sampled = threads.map_pieces(sample_chunk, chunks, workers if fits else 1)
    if progress is not None:
        progress(0.5, "detail mesh: height patches, edge and interior samples")
    # Each edge's kept samples (m_edge of them, in its direction) from kept_start on in
    # kept_points: the chunks' edges follow one another.
    m_edge = np.zeros(e_p.size, dtype=np.int64)
    kept_points = np.zeros((0, 3), dtype=F32)
    if sample_dist > 0:
        istart, jx, jy, jz = _join_samples([part[1] for part in sampled])
        m_edge = np.concatenate([part[0][0] for part in sampled])
        kept_points = np.concatenate([part[0][1] for part in sampled])
    kept_start = np.cumsum(m_edge) - m_edge
    kept = (kept_points, kept_start)

    # Polygons without interior samples only triangulate their hull: all of them at once.
    # The others add interior samples one by one (Delaunay after each), polygon by polygon.
    simple = slot < 0 if BATCH_HULLS else np.zeros(npolys, dtype=bool)
    nv_poly = npoly + np.bincount(e_p, weights=m_edge, minlength=npolys).astype(np.int64)
    nt_poly = nv_poly - 2
    if BATCH_HULLS and sample_dist > 0:
        # Polygons whose first interior sample check adds nothing keep their hull
        # triangulation: found for all of them at once.
        sampled_polys = np.flatnonzero(~simple)
        if sampled_polys.size:
            simple[sampled_polys[_adds_no_sample(
                sampled_polys, npoly, pv, e_p, m_edge, edge_base, kept, nv_poly, slot,
                istart, jx, jy, jz, sample_max_error,
            )]] = True  # fmt: skip
    per_poly: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    grown = np.flatnonzero(~simple).tolist()
    items = []
    for p in grown:
        n = int(npoly[p])
        hull: list[int] = []
        parts = [pv[p, :n]]
        nv = n
        if sample_dist > 0:
            first = int(edge_base[p])
            for k, m, at in zip(
                range(n),
                m_edge[first : first + n].tolist(),
                kept_start[first : first + n].tolist(),
                strict=True,
            ):
                hull.append((k - 1) % n)
                if m:
                    hull.extend(range(nv, nv + m))
                    parts.append(kept_points[at : at + m])
                    nv += m
        else:  # Recast leaves the hull empty here (issue #650); use the polygon itself.
            hull = list(range(n))
        verts = np.concatenate(parts) if len(parts) > 1 else pv[p, :n].copy()
        s = int(slot[p])
        samples = None
        if s >= 0:
            lo, hi = istart[s], istart[s + 1]
            samples = (jx[lo:hi], jy[lo:hi], jz[lo:hi])
        items.append((verts, hull, n, s >= 0, samples))
    executor = ctx.executor if ctx is not None else None
    built = None
    if BATCH_INSERTS and executor is not None and items and _insert_work(items) >= POOL_MIN_WORK:
        assert ctx is not None
        try:
            built = _details_in_pool(executor, items, sample_max_error)
        except Exception as exc:  # a broken pool: the work is the same here, only slower
            ctx.warn(
                f"detail mesh: the worker processes failed ({type(exc).__name__}: {exc}); "
                "the polygons were finished in this process"
            )
    if built is None and BATCH_INSERTS and items:
        built = _details_with_samples(items, sample_max_error)
    if built is None:
        built = []
        step = max(1, len(items) // 10)
        for i, item in enumerate(items):
            built.append(_build_poly_detail(*item, sample_max_error))
            if progress is not None and i % step == 0:
                progress(0.5 + 0.5 * i / len(items), "detail mesh: polygons")
    for p, (dv, dt) in zip(grown, built, strict=True):
        per_poly[p] = (dv, np.asarray(dt, dtype=np.int64).reshape(-1, 4))
        nv_poly[p], nt_poly[p] = dv.shape[0], len(dt)
    meshes = np.zeros((npolys, 4), dtype=np.uint32)
    vbase = np.concatenate([[0], np.cumsum(nv_poly)])
    tbase = np.concatenate([[0], np.cumsum(nt_poly)])
    meshes[:, 0], meshes[:, 1] = vbase[:-1], nv_poly
    meshes[:, 2], meshes[:, 3] = tbase[:-1], nt_poly
    local = np.empty((int(vbase[-1]), 3), dtype=F32)
    out_tris = np.empty((int(tbase[-1]), 4), dtype=np.int64)
    for p, (dv, dt) in per_poly.items():
        local[vbase[p] : vbase[p + 1]] = dv
        out_tris[tbase[p] : tbase[p + 1]] = dt
    sp = np.flatnonzero(simple)
    if sp.size:
        _simple_details(
            sp, npoly, pv, e_p, m_edge, edge_base, kept, vbase, tbase, sample_dist > 0,
            local, out_tris,
        )  # fmt: skip
    tris = out_tris.astype(np.uint8)
    world = np.empty_like(local)
    world[:, 0] = local[:, 0] + orig[0]
    world[:, 1] = local[:, 2] + orig[1]
    world[:, 2] = local[:, 1] + (orig[2] + F32(chf.ch))
    if progress is not None:
        progress(1.0, f"detail mesh: {tris.shape[0]} triangles ({time.perf_counter() - t0:.3f}s)")
    for k, i in enumerate(batch):
        lo, hi = int(poly_first[k]), int(poly_first[k + 1])
        if len(batch) == 1:
            results[i] = PolyMeshDetail(meshes, world, tris)
            continue
        own = meshes[lo:hi].copy()
        own[:, 0] -= np.uint32(vbase[lo])
        own[:, 2] -= np.uint32(tbase[lo])
        results[i] = PolyMeshDetail(
            own, world[vbase[lo] : vbase[hi]].copy(), tris[tbase[lo] : tbase[hi]].copy()
        )
    return _all_built(results)


def _all_built(results: list[PolyMeshDetail | None]) -> list[PolyMeshDetail]:
    built = [r for r in results if r is not None]
    if len(built) != len(results):  # every mesh is either empty or in the batch
        raise AssertionError("a polygon mesh's detail mesh was not built")
    return built
