"""Walkable-slope marking and conservative triangle rasterization into a solid heightfield.

Data form: vertices float32 (n, 3) world, Z-up; triangles int32 (m, 3) indices; areas uint8
(m,). The grid covers X/Y, columns ``ix + iy * width``; span heights are integers in cell
heights above ``bmin[2]``.

Bit-exact with Recast (RecastRasterization.cpp): every float operation is float32 and in Recast's
order. Recast walks each triangle's outline in its own (Y-up) vertex order; VoxNav's Z-up
triangles are Recast's mirrored with the winding reversed, so the clipper walks (v0, v2, v1).
That way every clip interpolates each edge in the same direction Recast does and produces the
same floats.

Clipping is done edge by edge (`_clip_by_chains`): Recast's incremental cuts make each crossing
point of an edge depend only on that edge's previous crossing and its far end, so the k-th
crossing of every edge is one vectorized round. Triangles with a vertex exactly on a cut line
(grid-aligned geometry, the corner that sets the grid's bounds) or whose row polygons have one
go through the same chains, their cells built from the sets each dividePoly cut keeps
(`_clip_by_kept_sets`); only a row polygon that rounding leaves not monotone sends its
triangle to the polygon-by-polygon path (`_clip_triangles`), which runs Recast's full
dividePoly per round. Cells are put back in triangle order, which the span merge depends on
(the few flagged triangles' cells by binary search among the edge walk's, which are in that
order already; on one thread the flagged triangles of `KEPT_SETS_GROUP_CHUNKS` chunks share
one kept-sets call).

The span merge (Recast's addSpan, order-dependent per column) runs as rounds: round k adds
the k-th fragment of every column. In columns with many fragments (overlapping geometry) only
the fragments that are first to cover some unit of height take part in the rounds; each of
the others lies inside one span of the column as it stands then and only raises that span's
area, so it is folded in between rounds (`_split_dense`). A round tests only the state's rows
below the fullest active column's span count. The only Python loops run over the clipping
rounds and over these merge rounds.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import threads
from .arrays import select
from .config import NULL_AREA, SPAN_MAX_HEIGHT, WALKABLE_AREA, walkable_threshold
from .context import BuildContext
from .heightfield import Heightfield

F32 = np.float32
#: Bottom and top of an empty span slot in the merge state (above any real height). The
#: merge reads heights as int16 (they reach SPAN_MAX_HEIGHT, 8191): every difference it
#: takes stays within int16, and its passes move half the bytes of int32.
EMPTY = np.iinfo(np.int16).max
#: Triangles clipped together; bounds the clipping state (about 1 KiB per triangle).
CHUNK_TRIANGLES = 16384
#: Triangles per chunk when chunks are clipped on several threads (larger, so the work inside
#: NumPy outweighs the interpreter's share, which holds the GIL).
PARALLEL_CHUNK_TRIANGLES = 16384
#: Threads clipping chunks at once (NumPy releases the GIL in its loops).
WORKERS = min(2, os.cpu_count() or 1)
#: Triangles from which chunks are clipped on `WORKERS` threads (below, the threads' share
#: of interpreter work costs about what they save: dungeon, 10k triangles, in four chunks on
#: two threads measured 8 % faster in one sitting and 4 % slower in another).
PARALLEL_MIN_TRIANGLES = 1 << 15
#: Cells smaller than the coordinates' magnitude over this take the polygon-by-polygon path:
#: the edge walk needs every crossing well short of the next cut line. A crossing lies within
#: a few float32 steps of its line (an interpolation's roundings: about magnitude * 2**-21),
#: so cells of magnitude * 2**-17 leave it at least 16 times that. (The walk also sends any
#: triangle whose row or cell polygons come out doubtful to the polygon path; random soups
#: with cells of 4 float32 steps still matched the one-triangle-at-a-time oracle.)
EDGE_WALK_MIN_CELL_STEPS = 2.0**17
#: Polygons from which a clipping sweep's round sends only those its line really cuts through
#: dividePoly (below, all of them: fewer calls per round).
SWEEP_SPLIT_FROM = 256
#: Fragments merged together; bounds the merge state (about 40 bytes per fragment).
CHUNK_FRAGMENTS = 1 << 18
#: Column blocks the span merge cuts every piece of fragments at; its ranges are runs of them.
MERGE_BLOCKS = 4096
#: Chunks clipped on one thread whose flagged triangles go through the kept-sets path in
#: one call (their edge walks' fragments wait meanwhile; `core.memory` counts them).
KEPT_SETS_GROUP_CHUNKS = 4
#: Fragments in a column from which the merge sets apart those that only raise an area.
DENSE_COLUMN_FRAGMENTS = 64
#: Height units [Units: ch] per fragment a dense column may span to be split (bounds memory).
DENSE_UNITS_PER_FRAGMENT = 1


def mark_walkable_triangles(
    verts, tris, max_slope_degrees: float, *, ctx: BuildContext | None = None
) -> np.ndarray:
    """Area per triangle: 63 (walkable) where the unit normal's up component > cos(max slope).

    verts float32 (n, 3) Z-up [Units: wu]; tris int32 (m, 3); max_slope_degrees [Limit: 0..90).
    Returns uint8 (m,). Degenerate triangles normalise to NaN and are not walkable. The normal
    is Recast's cross(v1 - v0, v2 - v0) of the mirrored triangle, summed in Recast's order.
    """
    verts = np.asarray(verts, dtype=F32)
    tris = np.asarray(tris, dtype=np.int64)
    if tris.shape[0] == 0:
        return np.zeros(0, dtype=np.uint8)
    # Recast's triangle (a, b, c) is VoxNav's (a, c, b) with y and z swapped. Per axis, on
    # contiguous coordinates: 1-D takes, and loops over the triangles rather than 3 items.
    corners = (tris[:, 0], tris[:, 2], tris[:, 1])
    e0, e1 = [], []
    for axis in (0, 2, 1):
        coord = np.ascontiguousarray(verts[:, axis])
        v0, v1, v2 = (coord.take(corner) for corner in corners)
        e0.append(v1 - v0)
        e1.append(v2 - v0)
    nx = e0[1] * e1[2] - e0[2] * e1[1]
    ny = e0[2] * e1[0] - e0[0] * e1[2]
    nz = e0[0] * e1[1] - e0[1] * e1[0]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv_len = F32(1.0) / np.sqrt(nx * nx + ny * ny + nz * nz)
        up = ny * inv_len
    areas = np.zeros(tris.shape[0], dtype=np.uint8)
    areas[up > walkable_threshold(max_slope_degrees)] = WALKABLE_AREA
    return areas


def _divide_cut(coords, count, delta, width, keep=None, extent=False):
    """The full dividePoly for polygons the line really cuts.

    Slot-major layout: coords are float32 (K, N) (vertex slot, polygon), delta (K, N) is
    offset - coordinate, count (N,). Returns ((below, counts), (above coords, counts)), each
    coordinate (width, N). ``below`` holds only the coordinates listed in ``keep`` (default
    all), or with ``extent`` the min and max of ``keep[0]`` over the part (float32 (N,) each),
    read straight from the candidates without placing them.
    """
    slots, n_poly = delta.shape
    cols = np.arange(n_poly)
    valid = np.arange(slots)[:, None] < count[None, :]
    last = count - 1
    delta_b = _previous(delta, cols, last)
    pos_a = delta >= 0
    cross = (pos_a != (delta_b >= 0)) & valid
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = delta_b / (delta_b - delta)
        inters = []
        for c in coords:
            c_b = _previous(c, cols, last)
            inters.append(c_b + (c - c_b) * s)
    keep_below = valid & select(cross, delta > 0, pos_a)
    keep_above = valid & select(cross, delta < 0, delta <= 0)
    # Candidates interleaved per input vertex: (intersection, vertex). Each emitted candidate
    # goes to its running position; the rest go to a spare last slot that is cut off.
    candidates = [
        np.stack([inter, c], axis=1).reshape(2 * slots, n_poly)
        for inter, c in zip(inters, coords, strict=True)
    ]
    keep = range(len(coords)) if keep is None else keep
    results = []
    for side, keep_side, wanted in ((0, keep_below, keep), (1, keep_above, range(len(coords)))):
        emit = np.stack([cross, keep_side], axis=1).reshape(2 * slots, n_poly)
        if side == 0 and extent:
            values = candidates[wanted[0]]
            n_out = emit.sum(axis=0, dtype=np.int64)
            low = select(emit, values, np.inf).min(axis=0).astype(F32)
            high = select(emit, values, -np.inf).max(axis=0).astype(F32)
            results.append(([low, high], n_out))
            continue
        position = np.cumsum(emit, axis=0, dtype=np.int32) - 1
        n_out = position[-1].astype(np.int64) + 1
        if n_out.size and int(n_out.max()) > width:
            raise AssertionError("clipped polygon exceeds its vertex slots")
        target = (select(emit, position, width) * n_poly + cols).ravel()
        out = []
        for k in wanted:
            flat = np.zeros((width + 1) * n_poly, dtype=F32)
            flat[target] = candidates[k].ravel()
            out.append(flat.reshape(width + 1, n_poly)[:width])
        results.append((out, n_out))
    return results


def clip_plan(n_tris: int) -> tuple[int, int]:
    """(triangles per chunk, chunks clipped at once) for ``n_tris`` triangles: on
    `WORKERS` threads from `PARALLEL_MIN_TRIANGLES` on, in chunks of at most
    `PARALLEL_CHUNK_TRIANGLES` and at least four chunks (so both threads stay busy to the
    end); else one `CHUNK_TRIANGLES` chunk at a time. Read at call time (`core.memory`
    predicts the clipping state from it)."""
    workers = threads.allowed(WORKERS)
    if workers > 1 and n_tris >= PARALLEL_MIN_TRIANGLES:
        return min(PARALLEL_CHUNK_TRIANGLES, -(-n_tris // 4)), workers
    return CHUNK_TRIANGLES, 1


def _chunks(tri_ids, size: int | None = None):
    """(positions, triangle ids) of consecutive chunks of at most ``size`` triangles (default
    `CHUNK_TRIANGLES`, read at call time)."""
    size = CHUNK_TRIANGLES if size is None else size
    for start in range(0, tri_ids.shape[0], size):
        sel = slice(start, start + size)
        yield sel, tri_ids[sel]


def _clip_triangles(tri_verts, tri_ids, row_lo, row_hi, rc_bmin, cs, ics, width):
    """Clip triangles (float32 (N, 3, 3), Recast frame and order) into cell polygons.

    Returns None or (triangle id, row, column, lowest and highest height above bmin) of every
    cell polygon with 3 or more vertices, heights float32 [Units: wu], not yet clamped.
    """
    # Recast frame coordinates, one (K, N) array each: x (columns), height, row axis.
    coords = [np.ascontiguousarray(tri_verts[:, :, k].T, dtype=F32) for k in range(3)]
    count = np.full(tri_ids.shape[0], 3, dtype=np.int64)
    rows = _sweep(coords, count, row_lo, row_hi, tri_ids, 2, rc_bmin[2], cs, keep=(0, 1))
    if rows is None:
        return None
    (rx, ry), rcount, rrow, rowner = rows
    min_x, max_x = _extent(rx, rcount)
    col_lo = np.trunc((min_x - rc_bmin[0]) * ics)
    col_hi = np.trunc((max_x - rc_bmin[0]) * ics)
    inside = ~((col_hi < 0) | (col_lo >= width))
    col_lo = np.clip(col_lo, -1, width - 1).astype(np.int64)
    col_hi = np.clip(col_hi, 0, width - 1).astype(np.int64)

    sel = np.nonzero(inside & (col_lo <= col_hi))[0]
    cells = _sweep(
        [rx[:, sel], ry[:, sel]], rcount[sel], col_lo[sel], col_hi[sel], sel, 0, rc_bmin[0], cs,
        keep=(1,), extent=True,
    )  # fmt: skip
    if cells is None:
        return None
    (frag_min, frag_max), _, fcol, fseq = cells
    return rowner[fseq], rrow[fseq], fcol, frag_min - rc_bmin[1], frag_max - rc_bmin[1]


def _cut_lines(origin, cs, n_cells):
    """float32 (n_cells + 1,): the cut line of cell k, Recast's (origin + float(k) * cs) + cs,
    for k = -1 .. n_cells - 1 at index k + 1. Increasing, since float rounding is monotone."""
    k = np.arange(-1, n_cells, dtype=np.int64).astype(F32)
    return ((F32(origin) + k * F32(cs)) + F32(cs)).astype(F32)


def _cell_of(values, lines, first, last, origin, ics):
    """(cell, on_line) of coordinates against the cut lines of cells first..last.

    cell: the first cut k >= first whose line is >= the value, or last + 1 past the last cut
    (the part Recast throws away; NaN goes there too); on_line: the value equals one of those
    lines exactly.
    """
    found, on_line = _line_index(values, lines, origin, ics)
    return _clip_cell(found, first, last), _on_cut(found, on_line, first, last)


def _clip_cell(index, first, last):
    """The cell of a `_line_index` among the cuts of cells first..last (see `_cell_of`)."""
    return np.clip(index - 1, first, last + 1)


def _on_cut(index, on_line, first, last):
    """A value at `_line_index` ``index`` lies exactly on one of the cuts first..last."""
    return on_line & (index - 1 >= first) & (index - 1 <= last)


def _line_index(values, lines, origin, ics):
    """(index, on_line): how many cut lines lie below each coordinate (NaN: all of them), and
    whether it equals the line at that index exactly. Guessed from the cell size, checked
    against the float32 lines on both sides; the rare miss is searched."""
    n_lines = lines.shape[0]
    bounded = np.concatenate([[-np.inf], lines, [np.inf]]).astype(F32)
    guess = values - F32(origin)
    guess *= F32(ics)
    np.ceil(guess, out=guess)
    np.fmin(guess, n_lines, out=guess)
    found = np.fmax(guess, 0).astype(np.int32)
    del guess
    # Takes, not fancy indexing (a third of the time with these int32 indices); the line
    # above a guess read from the table shifted by one.
    above = bounded[1:].take(found)
    missed = bounded.take(found) < values
    missed &= above >= values
    np.logical_not(missed, out=missed)
    missed &= ~np.isnan(values)
    if missed.any():
        found[missed] = np.searchsorted(lines, values[missed], side="left")
        above = bounded[1:].take(found)
    return found, above == values


def _descending_order(counts):
    """A stable order of counts from the largest down; radix sort when they fit 16 bits."""
    top = int(counts.max(initial=0))
    if top < 1 << 16:
        return np.argsort((top - counts).astype(np.uint16), kind="stable")
    return np.argsort(-counts, kind="stable")


def _walk_chains(near, far, forward, first_line, n_cross, dest, lines, outputs):
    """Every crossing of every edge with the cut lines it spans, as successive dividePoly calls
    compute them: the j-th crossing interpolates between the (j-1)-th and the far end.

    near/far: lists of float32 (E,) coordinates, the cut axis first; near is the end on the low
    side of the lines. ``forward``: the edges run from near to far in the polygon's order (else
    far to near), which fixes Recast's interpolation direction. Crossing j of edge e is on line
    first_line[e] + j; its coordinates after the axis go to outputs[:, dest[e] + j] (float32
    (K - 1, n)). One round per crossing index, over a prefix of the edges sorted by crossing
    count, in place: the rounds are many, and the interpreter's share of each holds the GIL
    (so both directions walk in the same rounds: `_walk_sides`).
    """
    if n_cross.shape[0] == 0:
        return
    order = _descending_order(n_cross)
    n_sorted = n_cross[order]
    active = np.searchsorted(-n_sorted, -np.arange(int(n_sorted[0])), side="left")
    walk = [c[order] for c in near]
    ends = [c[order] for c in far]
    line_index = first_line[order] + 1
    dest = dest[order]
    for j, m in enumerate(active.tolist()):
        offset = lines.take(line_index[:m] + j)
        point, end = walk[0][:m], ends[0][:m]
        # Recast's dividePoly: s from the edge's first vertex B, then B + (A - B) * s.
        if forward:
            delta_b = offset - point
            s = delta_b / (delta_b - (offset - end))
        else:
            delta_b = offset - end
            s = delta_b / (delta_b - (offset - point))
        at = dest[:m] + j
        for c in range(len(walk)):
            point, end = walk[c][:m], ends[c][:m]
            if forward:
                step = end - point
                step *= s
                point += step
            else:
                step = point - end
                step *= s
                np.add(end, step, out=point)
            if c:
                outputs[c - 1][at] = point


def _walk_sides(ahead, back, lines, outputs):
    """`_walk_chains` of the edges of both directions in one walk: its rounds number the
    most crossings of any edge, not that of each direction added up.

    ``ahead``: (near, far, first_line, n_cross, dest) of the edges running from near to far,
    ``back``: of those running from far to near, each as `_walk_chains` takes them. Recast's
    dividePoly interpolates from the edge's first vertex B towards its second A:
    s = (line - B) / ((line - B) - (line - A)), then B + (A - B) * s; going ahead the walking
    point is B, coming back it is A. So each coordinate is held as its B and its A values,
    the edges coming back first in ascending crossing count, then the ones going ahead in
    descending count: a round's edges are one contiguous run, and the new crossings replace
    the B values of its ahead part and the A values of its back part. The same float32
    operations on the same values as one direction at a time.
    """
    if not back[3].shape[0] or not ahead[3].shape[0]:
        forward = bool(ahead[3].shape[0])
        near, far, first, n_cross, dest = ahead if forward else back
        _walk_chains(near, far, forward, first, n_cross, dest, lines, outputs)
        return
    order_ahead = _descending_order(ahead[3])
    order_back = _descending_order(back[3])[::-1]
    n_back = order_back.shape[0]
    b_vals = [
        np.concatenate([c_back.take(order_back), c_ahead.take(order_ahead)])
        for c_back, c_ahead in zip(back[1], ahead[0], strict=True)
    ]
    a_vals = [
        np.concatenate([c_back.take(order_back), c_ahead.take(order_ahead)])
        for c_back, c_ahead in zip(back[0], ahead[1], strict=True)
    ]
    line_index, dest = (
        np.concatenate([back[i].take(order_back), ahead[i].take(order_ahead)]) for i in (2, 4)
    )
    line_index += 1
    counts_ahead = ahead[3].take(order_ahead)  # descending
    counts_back = back[3].take(order_back)  # ascending
    rounds = max(int(counts_ahead[0]), int(counts_back[-1]))
    steps = np.arange(rounds)
    # Per round the edges with more crossings than the round's index: [lo, n_back) coming
    # back, [n_back, hi) going ahead.
    lows = np.searchsorted(counts_back, steps, side="right").tolist()
    highs = (n_back + np.searchsorted(-counts_ahead, -steps, side="left")).tolist()
    for j, (lo, hi) in enumerate(zip(lows, highs, strict=True)):
        run = slice(lo, hi)
        split = n_back - lo
        offset = lines.take(line_index[run] + j)
        delta_b = offset - b_vals[0][run]
        s = delta_b / (delta_b - (offset - a_vals[0][run]))
        at = dest[run] + j
        for c in range(len(b_vals)):
            b, a = b_vals[c], a_vals[c]
            point = a[run] - b[run]
            point *= s
            point += b[run]
            b[n_back:hi] = point[split:]
            a[lo:n_back] = point[:split]
            if c:
                outputs[c - 1][at] = point


def _by_corner(values):
    """An (n, 3) array as an (n, 3) view of a contiguous (3, n) copy."""
    return np.ascontiguousarray(values.T).T


def _clip_by_chains(tri_verts, row_lo, row_hi, rc_bmin, cs, ics, width, height):
    """Cell polygons of triangles in general position, edge by edge instead of polygon by
    polygon.

    A cut line crosses a clipped triangle's outline exactly once going up the axis and once
    going down, unless a vertex lies exactly on it; each crossing point depends only on the
    same edge's previous crossing and its far end. So a row polygon is its triangle's edge
    pieces plus two connectors along the cut lines, and a cell polygon's heights are the
    crossings on its two lines plus the row polygon's vertices between them. Triangles with a
    vertex exactly on a cut line, or whose row polygons come out not monotone by a rounding,
    are flagged for the polygon-by-polygon path.

    Returns (fallback bool (N,), triangle index into tri_verts, row, column, lowest and highest
    height float32 [Units: wu] above bmin) in triangle, row, column order.
    """
    n_tris = tri_verts.shape[0]
    row_lines = _cut_lines(rc_bmin[2], cs, height)
    # Per-corner arrays are (n, 3) views of (3, n) arrays: NumPy then loops over n, not over
    # the three corners of each triangle, and the results it allocates keep that layout.
    vert_z = _by_corner(tri_verts[:, :, 2])
    vert_row, on_line = _cell_of(
        vert_z, row_lines, row_lo[:, None], row_hi[:, None], rc_bmin[2], ics
    )
    fallback = on_line.any(axis=1)
    n_rows = row_hi - row_lo + 1
    row_base = np.cumsum(n_rows) - n_rows
    total_rows = int(n_rows.sum())
    # The crossings of the edges going up the rows, then of those coming down: one walk.
    crossings = np.full((2, 2 * total_rows), np.nan, F32)
    cross = {True: crossings[:, :total_rows], False: crossings[:, total_rows:]}
    slots = []
    for a in range(3):
        b = (a - 1) % 3  # Recast walks edge (b, a) when it reaches vertex a
        forward = vert_z[:, b] < vert_z[:, a]
        low = select(forward, vert_row[:, b], vert_row[:, a])
        high = select(forward, vert_row[:, a], vert_row[:, b])
        slots.append((b, a, forward, low, high))
    walks = []
    for side in (True, False):
        parts = []
        for b, a, forward, low, high in slots:
            pick = np.nonzero((forward == side) & (high > low) & ~fallback)[0]
            near, far = (b, a) if side else (a, b)
            parts.append((pick, near, far, low[pick], high[pick] - low[pick]))
        near = [np.concatenate([tri_verts[p[0], p[1], k] for p in parts]) for k in (2, 0, 1)]
        far = [np.concatenate([tri_verts[p[0], p[2], k] for p in parts]) for k in (2, 0, 1)]
        first = np.concatenate([p[3] for p in parts])
        owner = np.concatenate([p[0] for p in parts])
        n_cross = np.concatenate([p[4] for p in parts])
        dest = row_base[owner] + (first - row_lo[owner])
        if not side:
            dest += total_rows
        walks.append((near, far, first, n_cross, dest))
    _walk_sides(*walks, row_lines, crossings)
    del walks

    # A row polygon's vertices: the two crossings on its top line (``up``: on the edge going
    # up the rows, ``down``: on the one coming back), the two on its bottom line (the row
    # below's top ones) and the triangle's vertices inside the row.
    row_tri = np.repeat(np.arange(n_tris), n_rows)
    # The per-row and per-cell gathers go by `take`: NumPy's fancy indexing costs 1.3-2x as
    # much (2-D, or through int32 indices, the most), and this function is most of the
    # rasterizer's time.
    row = row_lo.take(row_tri) + (np.arange(total_rows) - row_base.take(row_tri))
    up_x, up_y = cross[True]
    down_x, down_y = cross[False]

    def row_below(values):
        out = np.roll(values, 1)
        out[row_base] = np.nan if values.dtype == F32 else 0
        return out

    low_up_x, low_up_y, low_down_x, low_down_y = map(row_below, (up_x, up_y, down_x, down_y))
    top = ~np.isnan(up_x)
    bottom = ~np.isnan(low_up_x)
    vert_in = vert_row <= row_hi[:, None]
    vert_poly = select(vert_in, row_base[:, None] + (vert_row - row_lo[:, None]), 0)
    n_inside = np.zeros(total_rows, dtype=np.int64)
    min_x = np.fmin(np.fmin(up_x, down_x), np.fmin(low_up_x, low_down_x))
    max_x = np.fmax(np.fmax(up_x, down_x), np.fmax(low_up_x, low_down_x))
    for j in range(3):
        has = np.nonzero(vert_in[:, j])[0]
        at, x = vert_poly[:, j].take(has), tri_verts[:, j, 0].take(has)
        min_x[at] = np.fmin(min_x.take(at), x)
        max_x[at] = np.fmax(max_x.take(at), x)
        n_inside[at] += 1
    keep = (2 * top + 2 * bottom + n_inside >= 3) & (row >= 0) & ~fallback.take(row_tri)
    col_lo = np.trunc((min_x - rc_bmin[0]) * ics)
    col_hi = np.trunc((max_x - rc_bmin[0]) * ics)
    keep &= ~((col_hi < 0) | (col_lo >= width))
    col_lo = np.clip(select(keep, col_lo, 0), -1, width - 1).astype(np.int32)
    col_hi = np.clip(select(keep, col_hi, 0), 0, width - 1).astype(np.int32)

    # Columns: where each vertex falls among the cut lines, then the same walk along x.
    col_lines = _cut_lines(rc_bmin[0], cs, width)
    index_up, on_up = _line_index(up_x, col_lines, rc_bmin[0], ics)
    index_down, on_down = _line_index(down_x, col_lines, rc_bmin[0], ics)
    index_vert, on_vert = _line_index(_by_corner(tri_verts[:, :, 0]), col_lines, rc_bmin[0], ics)
    index_min, _ = _line_index(min_x, col_lines, rc_bmin[0], ics)
    index_max, _ = _line_index(max_x, col_lines, rc_bmin[0], ics)

    def cell(index, lo=col_lo, hi=col_hi):
        return _clip_cell(index, lo, hi)

    def cut(index, on_line, lo=col_lo, hi=col_hi):
        return _on_cut(index, on_line, lo, hi)

    c_up, c_down = cell(index_up), cell(index_down)
    index_low_up, index_low_down = row_below(index_up), row_below(index_down)
    c_low_up, c_low_down = cell(index_low_up), cell(index_low_down)
    vert_lo, vert_hi = col_lo.take(vert_poly), col_hi.take(vert_poly)
    c_vert = cell(index_vert, vert_lo, vert_hi)
    vert_in &= keep.take(vert_poly)
    bad = keep & (
        (top & (cut(index_up, on_up) | cut(index_down, on_down)))
        | (bottom & (cut(index_low_up, row_below(on_up)) | cut(index_low_down, row_below(on_down))))
    )
    bad_vert = vert_in & cut(index_vert, on_vert, vert_lo, vert_hi)
    fallback[np.nonzero(bad_vert.any(axis=1))[0]] = True

    # The five directed edges of each row polygon (B -> A): two connectors along the cut
    # lines, then the pieces of the triangle's three edges. Each as (valid, cell of B, cell of
    # A, a function giving the x and y of B and A for a subset of row polygons).
    def piece(b_x, b_y, a_x, a_y):
        return lambda at: (b_x.take(at), b_y.take(at), a_x.take(at), a_y.take(at))

    edges = [
        (top, c_up, c_down, piece(up_x, up_y, down_x, down_y)),
        (bottom, c_low_down, c_low_up, piece(low_down_x, low_down_y, low_up_x, low_up_y)),
    ]
    for b, a, forward, low, high in slots:
        fwd = forward.take(row_tri)
        # Between its end rows an edge starts from the crossing on the row's bottom line
        # (going up) or its top line (coming back) and ends on the other; in the rows holding
        # its own vertices it starts or ends there instead.
        ends = [
            select(fwd, c_low_up, c_down),
            select(fwd, low_up_x, down_x),
            select(fwd, low_up_y, down_y),
            select(fwd, c_up, c_low_down),
            select(fwd, up_x, low_down_x),
            select(fwd, up_y, low_down_y),
        ]
        for vertex, (c_end, x_end, y_end) in ((b, ends[:3]), (a, ends[3:])):
            # Takes from the columns: indexing (has, vertex) is NumPy's 2-D path, slower.
            has = np.nonzero(vert_in[:, vertex])[0]
            at = vert_poly[:, vertex].take(has)
            c_end[at] = c_vert[:, vertex].take(has)
            x_end[at] = tri_verts[:, vertex, 0].take(has)
            y_end[at] = tri_verts[:, vertex, 1].take(has)
        edges.append(
            (
                (low.take(row_tri) <= row) & (row <= high.take(row_tri)),
                ends[0],
                ends[3],
                piece(*ends[1:3], *ends[4:]),
            )
        )
    going_up = np.zeros(total_rows, dtype=np.int64)
    going_down = np.zeros(total_rows, dtype=np.int64)
    for valid, c_b, c_a, _ in edges:
        step = (c_a - c_b) * valid
        going_up += np.maximum(step, 0)
        going_down += np.maximum(-step, 0)
    expected = cell(index_max) - cell(index_min)
    bad |= keep & ((going_up != expected) | (going_down != expected))
    fallback[row_tri[bad]] = True
    good = keep & ~fallback.take(row_tri)
    del going_up, going_down, expected, bad, keep, step, index_min, index_max
    del index_up, index_down, index_vert, index_low_up, index_low_down, on_up, on_down, on_vert
    del min_x, max_x, n_inside

    n_cells = select(good, col_hi - col_lo + 1, 0)
    cell_base = np.cumsum(n_cells) - n_cells
    total_cells = int(n_cells.sum())
    crossings_y = np.full((1, 2 * total_cells), np.nan, F32)
    cross_y = {True: crossings_y[:, :total_cells], False: crossings_y[:, total_cells:]}
    walks = []
    for side in (True, False):
        parts = []
        for valid, c_b, c_a, ends in edges:
            at = (valid & good & ((c_a > c_b) if side else (c_b > c_a))).nonzero()[0]
            b_x, b_y, a_x, a_y = ends(at)
            c_at_b, c_at_a = c_b.take(at), c_a.take(at)
            first = c_at_b if side else c_at_a
            n_cross = np.abs(c_at_a - c_at_b)
            near, far = ((b_x, b_y), (a_x, a_y)) if side else ((a_x, a_y), (b_x, b_y))
            parts.append(
                (near, far, first, n_cross, cell_base.take(at) + (first - col_lo.take(at)))
            )
        near = [np.concatenate([p[0][k] for p in parts]) for k in range(2)]
        far = [np.concatenate([p[1][k] for p in parts]) for k in range(2)]
        first, n_cross, dest = (np.concatenate([p[i] for p in parts]) for i in range(2, 5))
        del parts
        if not side:
            dest += total_cells
        walks.append((near, far, first, n_cross, dest))
    _walk_sides(*walks, col_lines, crossings_y)
    del walks
    # The edges' pieces hold a dozen per-row arrays, all alive at this function's peak
    # (dungeon: 28.4 MiB with them, 17.0 without). Memory beyond the heap the other stages
    # leave is touched fresh on every bake: dungeon's bake still faults in about 4,800 pages
    # here, some 8 ms.
    del edges, ends, slots, near, far, first, n_cross, dest, at, fwd
    del up_x, down_x, low_up_x, low_down_x, b_x, b_y, a_x, a_y

    # Vertices into their cells; one pass per vertex kind, so no cell is hit twice in a pass.
    # A cell of row polygon r and column c is at cell_index[r] + c.
    cell_index = cell_base - col_lo
    cell_verts = _CellVertices(total_cells)
    vert_good = vert_in & good.take(vert_poly)
    kinds = [
        (top & good & (c_up <= col_hi), None, c_up, up_y),
        (top & good & (c_down <= col_hi), None, c_down, down_y),
        (bottom & good & (c_low_up <= col_hi), None, c_low_up, low_up_y),
        (bottom & good & (c_low_down <= col_hi), None, c_low_down, low_down_y),
    ] + [
        (vert_good[:, j] & (c_vert[:, j] <= vert_hi[:, j]), vert_poly[:, j], c_vert[:, j],
         tri_verts[:, j, 1])
        for j in range(3)
    ]  # fmt: skip
    for placed, poly, c, y in kinds:
        which = placed.nonzero()[0]
        cells = cell_index.take(which if poly is None else poly.take(which))
        cells += c.take(which)
        cell_verts.add(cells, y.take(which))

    emitted, low, high = _cell_polygons(cross_y, n_cells, cell_base, col_lo, cell_verts)
    del cell_verts
    emit = np.nonzero(emitted)[0]
    del emitted
    owner = np.repeat(np.arange(total_rows, dtype=np.int32), n_cells)[emit]
    col = emit - cell_index.take(owner)
    return (
        fallback,
        row_tri.take(owner),
        row.take(owner),
        col,
        low.take(emit) - rc_bmin[1],
        high.take(emit) - rc_bmin[1],
    )


class _CellVertices:
    """Per cell of the row polygons, the vertices placed in it: their lowest and highest
    height (NaN: none) and their count, as `_cell_polygons` reads them."""

    def __init__(self, total_cells: int):
        self.low = np.full(total_cells, np.nan, F32)
        self.high = np.full(total_cells, np.nan, F32)
        self.count = np.zeros(total_cells, dtype=np.uint8)

    def add(self, cells, heights) -> None:
        """Vertices at ``heights`` (float32) into ``cells``; no cell twice in one call (the
        updates are gathered, then written)."""
        self.low[cells] = np.fmin(self.low.take(cells), heights)
        self.high[cells] = np.fmax(self.high.take(cells), heights)
        self.count[cells] = self.count.take(cells) + np.uint8(1)


def _cell_polygons(cross_y, n_cells, cell_base, col_lo, verts: _CellVertices):
    """Each cell's polygon from the crossings on its two column lines and its own vertices.

    ``cross_y``: {True: up, False: down} float32 (1, cells) heights of the crossing on each
    cell's right line (NaN: none); a row polygon's cells lie at cell_base[p] .. + n_cells[p],
    its first one at column col_lo[p]; ``verts``: the vertices placed in each cell. Returns
    (emitted bool: 3 or more vertices and not column -1, lowest height, highest height) per
    cell."""
    right_up, right_down = cross_y[True][0], cross_y[False][0]
    # Each cell's left line is the cell before's right line: the lowest and highest of its
    # two crossings and whether it has them, each shifted by one cell (a row polygon's first
    # cell has no line on its left).
    filled = np.flatnonzero(n_cells)
    starts = cell_base[filled]
    right_low = np.fmin(right_up, right_down)
    right_high = np.fmax(right_up, right_down)
    right_has = ~np.isnan(right_up)
    left_low, left_high, left_has = (
        np.roll(right_low, 1),
        np.roll(right_high, 1),
        np.roll(right_has, 1),
    )
    left_low[starts] = np.nan
    left_high[starts] = np.nan
    left_has[starts] = False
    # Crossings come in pairs on a line, so the up ones count two vertices each.
    lines_crossed = right_has.view(np.uint8) + left_has.view(np.uint8)
    low = np.fmin(np.fmin(right_low, left_low), verts.low)
    high = np.fmax(np.fmax(right_high, left_high), verts.high)
    emitted = verts.count + lines_crossed * np.uint8(2) >= 3
    # Column -1 (the part left of the grid) is only ever a row polygon's first cell.
    emitted[cell_base[filled[col_lo[filled] < 0]]] = False
    return emitted, low, high


def _emitted_cells(emitted, cell_base, n_cells, cell_index, owner, row):
    """(owner, row, column) of every emitted cell. ``emitted``: bool per cell, the cells of
    polygon p at cell_base[p] + (column - first column); cell_index = cell_base - first column.
    Each polygon's values are repeated over its emitted cells, not gathered per cell: on large
    grids every cell-sized index array costs its first touch."""
    before = np.zeros(emitted.shape[0] + 1, dtype=np.int64)
    np.cumsum(emitted, out=before[1:])
    per_poly = before[cell_base + n_cells] - before[cell_base]
    del before
    col = np.flatnonzero(emitted)
    col -= np.repeat(cell_index, per_poly)
    return np.repeat(owner, per_poly), np.repeat(row, per_poly), col


def _emitted_heights(emitted, low, high, base):
    """The lowest and highest height of every emitted cell, above ``base``. [Units: wu]"""
    low = low[emitted]
    low -= base
    high = high[emitted]
    high -= base
    return low, high


def _clip_by_kept_sets(tri_verts, row_lo, row_hi, rc_bmin, cs, ics, width, height):
    """Cell polygons of the triangles `_clip_by_chains` flags: vertices, or row polygon
    vertices, exactly on a cut line (grid-aligned geometry, the vertex that sets the grid's
    bounds) and rows that rounding leaves not monotone. Edge chains as there; the polygons
    are built from what each of Recast's cuts keeps.

    What a dividePoly cut at line L keeps on its low side: every edge's crossing with L, the
    vertices below L, and a vertex exactly on L whose incoming edge (in the walk's order)
    comes from the low side or along L; that vertex stays in the high part too. A vertex on L
    reached from the high side is dropped on both sides: its edge's crossing (the far end plus
    (vertex - far end) * 1, which can round apart from the vertex) stands for it. An edge
    crosses the lines from its low end's own line, when that end lies on one, up to the line
    below its high end; each crossing comes from the edge's previous one as in the chains.
    So the piece between lines L[k-1] and L[k] is: the crossings on both lines, the vertices
    strictly between them, and the vertices kept on either line. Rows are built as polygons
    in the walk's order (the column cuts read each vertex's predecessor); cells as the sets.
    A row polygon some column line crosses more than once each way (rounding) sends its
    triangle to `_clip_triangles`.

    Returns as `_clip_by_chains`.
    """
    n_tris = tri_verts.shape[0]
    # Per coordinate a (3, n) array; corner a's predecessor in Recast's walk is a - 1.
    vx, vy, vz = (np.ascontiguousarray(tri_verts[:, :, k].T) for k in range(3))
    prev = np.array([2, 0, 1])
    row_lines = _cut_lines(rc_bmin[2], cs, height)
    found, on_line = _line_index(vz, row_lines, rc_bmin[2], ics)
    cell = _clip_cell(found, row_lo, row_hi)
    on_cut = _on_cut(found, on_line, row_lo, row_hi)
    kept = ~on_cut | (vz[prev] <= vz)
    # Edge a runs from corner a - 1 to corner a.
    cell_b = cell[prev]
    low = np.minimum(cell_b, cell)
    n_cross = np.abs(cell - cell_b)
    forward = cell_b < cell
    edge_base = (np.cumsum(n_cross.ravel()) - n_cross.ravel()).reshape(3, n_tris)
    crossings = np.empty((2, int(n_cross.sum())), F32)  # x and height of every row crossing
    walks = []
    for side in (True, False):
        corner, tri = np.nonzero((forward == side) & (n_cross > 0))
        ends = (prev[corner], corner) if side else (corner, prev[corner])
        near, far = ([c[end, tri] for c in (vz, vx, vy)] for end in ends)
        at = (corner, tri)
        walks.append((near, far, low[at], n_cross[at], edge_base[at]))
    _walk_sides(*walks, row_lines, crossings)

    # Row polygons: per edge its crossings with the row's two lines (in the edge's direction),
    # then its end vertex if the row keeps it; nine candidate slots, compacted in order.
    n_rows = row_hi - row_lo + 1
    row_base = np.cumsum(n_rows) - n_rows
    total_rows = int(n_rows.sum())
    row_tri = np.repeat(np.arange(n_tris), n_rows)
    row = row_lo[row_tri] + (np.arange(total_rows) - row_base[row_tri])
    slot_ok = np.zeros((9, total_rows), dtype=bool)
    slot_x = np.zeros((9, total_rows), dtype=F32)
    slot_y = np.zeros((9, total_rows), dtype=F32)
    for a in range(3):
        first = low[a][row_tri]
        count = n_cross[a][row_tri]
        below = row - 1 - first  # the crossing's index on the row's bottom line
        above = below + 1
        fwd = forward[a][row_tri]
        on_bottom = (below >= 0) & (below < count)
        on_top = (above >= 0) & (above < count)
        # Going up, an edge meets the bottom line first; coming down, the top one.
        for slot, ok, k in (
            (3 * a, select(fwd, on_bottom, on_top), select(fwd, below, above)),
            (3 * a + 1, select(fwd, on_top, on_bottom), select(fwd, above, below)),
        ):
            at = np.flatnonzero(ok)
            place = edge_base[a][row_tri[at]] + k[at]
            slot_ok[slot, at] = True
            slot_x[slot, at] = crossings[0, place]
            slot_y[slot, at] = crossings[1, place]
        c_a = cell[a][row_tri]
        slot_ok[3 * a + 2] = kept[a][row_tri] & (
            (c_a == row) | (on_cut[a][row_tri] & (c_a + 1 == row))
        )
        slot_x[3 * a + 2] = vx[a][row_tri]
        slot_y[3 * a + 2] = vy[a][row_tri]
    n_verts = slot_ok.sum(axis=0)
    min_x = select(slot_ok, slot_x, np.inf).min(axis=0)
    max_x = select(slot_ok, slot_x, -np.inf).max(axis=0)
    col_lo = np.trunc((min_x - rc_bmin[0]) * ics)
    col_hi = np.trunc((max_x - rc_bmin[0]) * ics)
    rows = np.flatnonzero((n_verts >= 3) & (row >= 0) & ~((col_hi < 0) | (col_lo >= width)))
    fallback = np.zeros(n_tris, dtype=bool)
    n_poly = rows.shape[0]
    if n_poly == 0:
        empty = np.zeros(0, dtype=np.int64)
        return fallback, empty, empty, empty, np.zeros(0, F32), np.zeros(0, F32)
    ok = slot_ok[:, rows]
    position = np.cumsum(ok, axis=0) - 1
    n_verts = n_verts[rows]
    slots = int(n_verts.max())
    target = (select(ok, position, slots) * n_poly + np.arange(n_poly)).ravel()
    poly_x = np.zeros((slots + 1) * n_poly, dtype=F32)
    poly_y = np.zeros((slots + 1) * n_poly, dtype=F32)
    poly_x[target] = slot_x[:, rows].ravel()
    poly_y[target] = slot_y[:, rows].ravel()
    poly_x = poly_x.reshape(slots + 1, n_poly)[:slots]
    poly_y = poly_y.reshape(slots + 1, n_poly)[:slots]
    del slot_ok, slot_x, slot_y, ok, position, target
    owner, row = row_tri[rows], row[rows]
    col_lo = np.clip(col_lo[rows], -1, width - 1).astype(np.int64)
    col_hi = np.clip(col_hi[rows], 0, width - 1).astype(np.int64)

    # Columns: the same sets, the predecessor now a row polygon's previous slot.
    polys = np.arange(n_poly)
    last = n_verts - 1
    valid = np.arange(slots)[:, None] < n_verts
    col_lines = _cut_lines(rc_bmin[0], cs, width)
    found, on_line = _line_index(poly_x, col_lines, rc_bmin[0], ics)
    cell = _clip_cell(found, col_lo, col_hi)
    on_cut = _on_cut(found, on_line, col_lo, col_hi)
    kept = valid & (~on_cut | (_previous(poly_x, polys, last) <= poly_x))
    cell_b = _previous(cell, polys, last)
    low = np.minimum(cell_b, cell)
    n_cross = select(valid, np.abs(cell - cell_b), 0)
    forward = cell_b < cell
    # Going round, every line between the lowest and highest vertex cell is crossed at least
    # once each way: exactly once when the crossings add up to the span.
    span = select(valid, cell, -1).max(axis=0) - select(valid, cell, width + 1).min(axis=0)
    regular = ((n_cross * forward).sum(axis=0) == span) & ((n_cross * ~forward).sum(axis=0) == span)
    fallback[owner[~regular]] = True
    n_cells = select(regular, col_hi - col_lo + 1, 0)
    cell_base = np.cumsum(n_cells) - n_cells
    total_cells = int(n_cells.sum())
    crossings_y = np.full((1, 2 * total_cells), np.nan, F32)
    cross_y = {True: crossings_y[:, :total_cells], False: crossings_y[:, total_cells:]}
    walks = []
    for side in (True, False):
        slot, poly = np.nonzero((n_cross > 0) & (forward == side) & regular)
        before = select(slot > 0, slot - 1, last[poly])
        ends = (before, slot) if side else (slot, before)
        near, far = ([c[end, poly] for c in (poly_x, poly_y)] for end in ends)
        first = low[slot, poly]
        dest = cell_base[poly] + (first - col_lo[poly]) + (0 if side else total_cells)
        walks.append((near, far, first, n_cross[slot, poly], dest))
    _walk_sides(*walks, col_lines, crossings_y)

    cell_verts = _CellVertices(total_cells)
    cell_index = cell_base - col_lo
    for s in range(slots):
        here = np.flatnonzero(kept[s] & regular & (cell[s] <= col_hi))
        again = here[on_cut[s, here] & (cell[s, here] < col_hi[here])]
        for poly, shift in ((here, 0), (again, 1)):
            cell_verts.add(cell_index[poly] + cell[s, poly] + shift, poly_y[s, poly])
    emitted, low, high = _cell_polygons(cross_y, n_cells, cell_base, col_lo, cell_verts)
    del cell_verts
    tri, row, col = _emitted_cells(emitted, cell_base, n_cells, cell_index, owner, row)
    return (fallback, tri, row, col, *_emitted_heights(emitted, low, high, rc_bmin[1]))


def _extent(values, count):
    """float32 (N,) min and max over the first count[i] slots of each column of (K, N)."""
    used = np.arange(values.shape[0])[:, None] < count[None, :]
    return (
        select(used, values, np.inf).min(axis=0).astype(F32),
        select(used, values, -np.inf).max(axis=0).astype(F32),
    )


def _sweep(coords, count, first, last, ids, axis, origin, cs, keep, extent=False):
    """Cut strips ``first..last`` off every polygon along ``axis``, one strip per round.

    Recast's incremental clipping: the strip [.., origin + (i + 1) * cs] is cut from what was
    left after strip i - 1 (the line computed as (origin + float(i) * cs) + cs in float32).
    coords: float32 (K, N) arrays, slot-major; count, first, last, ids (N,). Pieces with 3 or
    more vertices and a strip index >= 0 are kept. Returns None when there are none, else
    (pieces, counts, strip index, owner id), where pieces are the coordinates listed in
    ``keep`` (K', N'), or with ``extent`` the min and max of the single kept coordinate
    (float32 (N',) each). Polygons wholly below the line become the piece untouched and
    polygons wholly above it carry on untouched: only the ones the line really cuts take the
    full dividePoly path.
    """
    out_parts: list[tuple] = []
    active = (first <= last) & (count >= 2)
    index, ids = first[active], ids[active]
    coords, count, last = [c[:, active] for c in coords], count[active], last[active]
    while ids.shape[0]:
        slots = coords[0].shape[0]
        offset = ((origin + index.astype(F32) * cs) + cs).astype(F32)
        if ids.shape[0] < SWEEP_SPLIT_FROM:
            # Few polygons: dividePoly on every one (a polygon wholly on one side comes out
            # whole on that side, as Recast's does), fewer calls per round than the split.
            delta = offset[None, :] - coords[axis]
            (piece, n_piece), (rest, n_rest) = _divide_cut(
                coords, count, delta, slots + 2, keep, extent
            )
            emit = (n_piece >= 3) & (index >= 0)
            if emit.any():
                if extent:
                    values = [p[emit] for p in piece]
                else:
                    values = [p[:, emit] for p in piece]
                out_parts.append((values, n_piece[emit], index[emit], ids[emit]))
            go_on = np.flatnonzero((index < last) & (n_rest >= 2))
            width = int(n_rest[go_on].max(initial=1))
            coords = [r[:width, go_on] for r in rest]
            count, index, ids, last = n_rest[go_on], index[go_on] + 1, ids[go_on], last[go_on]
            continue
        valid = np.arange(slots)[:, None] < count[None, :]
        delta = offset[None, :] - coords[axis]
        whole_below = np.all((delta > 0) | ~valid, axis=0)
        whole_above = np.all((delta < 0) | ~valid, axis=0)
        cut = np.nonzero(~(whole_below | whole_above))[0]
        below = np.nonzero(whole_below)[0]
        piece_sets = [([coords[k][:, below] for k in keep], count[below], below, False)]
        rest_sets = []
        above = np.nonzero(whole_above)[0]
        if above.shape[0]:
            rest_sets.append(([c[:, above] for c in coords], count[above], above))
        if cut.shape[0]:
            (piece, n_piece), (rest, n_rest) = _divide_cut(
                [c[:, cut] for c in coords], count[cut], delta[:, cut], slots + 2, keep, extent
            )
            piece_sets.append((piece, n_piece, cut, extent))
            rest_sets.append((rest, n_rest, cut))
        for piece, n_piece, which, reduced in piece_sets:
            emit = (n_piece >= 3) & (index[which] >= 0)
            if not emit.any():
                continue
            n_emit = n_piece[emit]
            if reduced:
                values = [p[emit] for p in piece]
            else:
                values = [p[:, emit] for p in piece]
                if extent:
                    values = list(_extent(values[0], n_emit))
            out_parts.append((values, n_emit, index[which][emit], ids[which][emit]))
        if not rest_sets:
            break
        # What is left goes on to the next strip.
        n_next = np.concatenate([r[1] for r in rest_sets])
        which = np.concatenate([r[2] for r in rest_sets])
        go_on = (index[which] + 1 <= last[which]) & (n_next >= 2)
        width = int(n_next[go_on].max(initial=1))
        coords = [
            np.concatenate([_pad(r[0][k], width)[:width] for r in rest_sets], axis=1)[:, go_on]
            for k in range(len(coords))
        ]
        which = which[go_on]
        count, index, ids, last = n_next[go_on], index[which] + 1, ids[which], last[which]
    if not out_parts:
        return None
    if extent:
        pieces = [np.concatenate([p[0][j] for p in out_parts]) for j in range(2)]
    else:
        width = max(p[0][0].shape[0] for p in out_parts)
        pieces = [
            np.concatenate([_pad(p[0][j], width) for p in out_parts], axis=1)
            for j in range(len(keep))
        ]
    return (
        pieces,
        np.concatenate([p[1] for p in out_parts]),
        np.concatenate([p[2] for p in out_parts]),
        np.concatenate([p[3] for p in out_parts]),
    )


def _previous(values, cols, last):
    """values[i - 1] per slot, wrapping to each polygon's own last vertex (Recast's inVertB)."""
    out = np.empty_like(values)
    out[1:] = values[:-1]
    out[0] = values[last, cols]
    return out


def _clip_pieces(verts, tris, bmin, bmax, cs, ch, width, height, finish=None):
    """Clip every triangle into cell fragments: a list of (int64 tri, row, col, uint16 smin,
    smax) pieces, each in triangle order (a triangle adds one fragment per cell at most), the
    pieces in triangle order. Arguments as `rasterize_fragments`; ``finish``, if given, maps
    each piece to what the list holds instead, on the clipping thread."""
    verts = np.asarray(verts, dtype=F32)
    tris = np.asarray(tris, dtype=np.int64)
    bmin = np.asarray(bmin, dtype=F32)
    bmax = np.asarray(bmax, dtype=F32)
    cs, ch = F32(cs), F32(ch)
    ics = F32(F32(1.0) / cs)
    ich = F32(F32(1.0) / ch)
    # Recast frame: axis 0 = x (columns), axis 2 = grid rows, axis 1 = height.
    # (m, 3, 3) in Recast's frame/order: each vertex row one 12-byte item of a 1-D take
    # (twice as fast as indexing rows by a 2-D array).
    rows = np.ascontiguousarray(verts[:, [0, 2, 1]]).view(np.dtype((np.void, 12))).reshape(-1)
    tri_verts = rows.take(tris[:, [0, 2, 1]].reshape(-1)).view(F32).reshape(-1, 3, 3)
    del rows
    rc_bmin = bmin[[0, 2, 1]]
    rc_bmax = bmax[[0, 2, 1]]
    # Pairwise over the three corners, each laid out contiguously per axis (on the strided
    # (m, 3) corners the loops run three items at a time: 8x slower; a reduction over the
    # middle axis 20x). tmin/tmax are (m, 3) views of (3, m) arrays.
    by_corner = np.ascontiguousarray(np.moveaxis(tri_verts, 0, -1))  # (corner, axis, m)
    tmin = np.minimum(np.minimum(by_corner[0], by_corner[1]), by_corner[2]).T
    tmax = np.maximum(np.maximum(by_corner[0], by_corner[1]), by_corner[2]).T
    del by_corner
    overlaps = (tmin[:, 0] <= rc_bmax[0]) & (tmax[:, 0] >= rc_bmin[0])
    for axis in (1, 2):
        overlaps &= (tmin[:, axis] <= rc_bmax[axis]) & (tmax[:, axis] >= rc_bmin[axis])
    tri_ids = np.nonzero(overlaps)[0]
    by = F32(rc_bmax[1] - rc_bmin[1])

    row_lo = np.trunc((tmin[tri_ids, 2] - rc_bmin[2]) * ics)
    row_hi = np.trunc((tmax[tri_ids, 2] - rc_bmin[2]) * ics)
    row_lo = np.clip(row_lo, -1, height - 1).astype(np.int64)
    row_hi = np.clip(row_hi, 0, height - 1).astype(np.int64)

    # Triangles go through in chunks: the clipping state stays cache-sized and the peak
    # memory bounded; fragments keep their triangle ids, so chunking changes no result.
    # NumPy releases the GIL inside its loops, so two threads keep both cores busy.
    # The edge walk relies on a crossing lying well short of the next cut line; with cells
    # under `EDGE_WALK_MIN_CELL_STEPS` parts of the coordinates' magnitude every triangle
    # takes the polygon-by-polygon path, which is Recast's own arithmetic.
    kept_min, kept_max = (tmin, tmax) if tri_ids.shape[0] == tmin.shape[0] else (
        tmin.take(tri_ids, axis=0), tmax.take(tri_ids, axis=0)
    )  # fmt: skip
    # Every coordinate lies between the lowest minimum and the highest maximum.
    magnitude = max(abs(float(kept_min.min(initial=0))), abs(float(kept_max.max(initial=0))))
    by_edges = float(cs) > magnitude / EDGE_WALK_MIN_CELL_STEPS

    def walk_chunk(part):
        """The edge walk of one chunk: (part, fallback, its fragments in triangle order or
        None); ``fallback`` flags the triangles it left to the other paths."""
        sel, chunk = part
        if not by_edges:
            return part, np.ones(chunk.shape[0], dtype=bool), None
        # Row gathers by take: NumPy's fancy indexing of 36-byte rows costs several times as
        # much.
        fallback, owner, *cells = _clip_by_chains(
            tri_verts.take(chunk, axis=0), row_lo[sel], row_hi[sel], rc_bmin, cs, ics,
            width, height,
        )  # fmt: skip
        return part, fallback, _snap_heights(chunk[owner], *cells, by, ich)

    def clip_group(parts):
        """The pieces of consecutive chunks, each chunk's one piece in triangle order. The
        triangles the edge walks flag (a few dozen a chunk) go through the kept-sets path in
        one call for the group: its rounds are as many for a few triangles as for many."""
        walked = [walk_chunk(part) for part in parts]
        placed: list[list] = [[] for _ in walked]
        flagged = [np.flatnonzero(fallback) for _, fallback, _ in walked]
        if by_edges and any(f.shape[0] for f in flagged):
            picks = [
                (sel, chunk, f) for ((sel, chunk), _, _), f in zip(walked, flagged, strict=True)
            ]
            ids = np.concatenate([chunk[f] for _, chunk, f in picks])
            still, owner, *cells = _clip_by_kept_sets(
                tri_verts.take(ids, axis=0),
                np.concatenate([row_lo[sel][f] for sel, _, f in picks]),
                np.concatenate([row_hi[sel][f] for sel, _, f in picks]),
                rc_bmin, cs, ics, width, height,
            )  # fmt: skip
            # The chunks are consecutive runs of ascending triangle ids: each chunk's cells
            # are those of the triangles from its first on, up to the next chunk's first.
            kept = _sorted_by_triangle([_snap_heights(ids[owner], *cells, by, ich)])
            cuts = np.searchsorted(kept[0], [int(chunk[0]) for _, chunk, _ in picks[1:]])
            bounds = [0, *cuts.tolist(), kept[0].shape[0]]
            at = 0
            for k, (_, fallback, _) in enumerate(walked):
                lo, hi = bounds[k], bounds[k + 1]
                if hi > lo:
                    placed[k].append(tuple(values[lo:hi] for values in kept))
                f = flagged[k]
                fallback[f[~still[at : at + f.shape[0]]]] = False
                at += f.shape[0]
        pieces = []
        for ((sel, chunk), fallback, main), more in zip(walked, placed, strict=True):
            out = ([] if main is None else [main]) + more
            if fallback.any():
                rows = np.arange(sel.start, sel.start + chunk.shape[0])[fallback]
                cells = _clip_triangles(
                    tri_verts.take(tri_ids[rows], axis=0), tri_ids[rows], row_lo[rows],
                    row_hi[rows], rc_bmin, cs, ics, width,
                )  # fmt: skip
                if cells is not None:
                    out.append(_snap_heights(*cells, by, ich))
            # The flagged triangles' cells come after the others' and the polygon path emits
            # its cells strip by strip: a stable sort on the triangle restores the call order
            # the span merge depends on. A triangle adds at most one fragment per cell, so
            # the order among one triangle's fragments is free. (No piece at all: the polygon
            # path's triangles, all of the chunk's, made no cell.)
            if by_edges and len(out) > 1:
                out = [_in_triangle_order(out[0], out[1:])]
            elif not by_edges and out:
                out = [_sorted_by_triangle(out)]
            pieces.extend(out if finish is None else [finish(*piece) for piece in out])
        return pieces

    chunk, n_threads = clip_plan(int(tri_ids.shape[0]))
    parts = list(_chunks(tri_ids, chunk))
    if n_threads > 1:  # a chunk at a time on each thread
        with ThreadPoolExecutor(n_threads) as pool:
            done = pool.map(clip_group, [[part] for part in parts])
            return [p for out in done for p in out]
    group = KEPT_SETS_GROUP_CHUNKS
    return [p for at in range(0, len(parts), group) for p in clip_group(parts[at : at + group])]


def _sorted_by_triangle(parts):
    """Fragment pieces (tri, row, col, smin, smax) joined and stably sorted by triangle."""
    joined = [np.concatenate(values) for values in zip(*parts, strict=True)]
    order = np.argsort(joined[0], kind="stable")
    return tuple(values[order] for values in joined)


def _in_triangle_order(main, extra):
    """`_sorted_by_triangle` of ``main`` (already in triangle order: the edge walk's cells)
    and the ``extra`` pieces (the flagged triangles' few): only those are sorted, then each
    goes in after the main fragments of its triangle or of any before it, as the stable sort
    of everything would place it; the main ones are copied once, not gathered."""
    extra = _sorted_by_triangle(extra)
    n_main, n_extra = main[0].shape[0], extra[0].shape[0]
    at = np.searchsorted(main[0], extra[0], side="right")
    at += np.arange(n_extra)
    from_main = np.ones(n_main + n_extra, dtype=bool)
    from_main[at] = False
    out = []
    for values, more in zip(main, extra, strict=True):
        joined = np.empty(n_main + n_extra, dtype=np.result_type(values, more))
        joined[from_main] = values
        joined[at] = more
        out.append(joined)
    return tuple(out)


def rasterize_fragments(verts, tris, areas, bmin, bmax, cs, ch, width, height):
    """Every span each triangle adds to each cell, before merging.

    verts float32 (n, 3) Z-up [Units: wu]; tris int32 (m, 3); areas uint8 (m,); bmin/bmax
    float32 (3,) [Units: wu]; cs, ch [Units: wu]; width, height [Units: cells].
    Returns int64 tri, int32 ix, int32 iy, uint16 smin, uint16 smax, uint8 area (one entry per
    fragment), sorted by triangle, then row, then column (Recast's call order).
    """
    pieces = _clip_pieces(verts, tris, bmin, bmax, cs, ch, width, height)
    if not pieces:
        return _empty_fragments()
    tri, frow, fcol, smin, smax = (np.concatenate(parts) for parts in zip(*pieces, strict=True))
    order = np.lexsort((fcol, frow, tri))
    tri, frow, fcol, smin, smax = tri[order], frow[order], fcol[order], smin[order], smax[order]
    return (
        tri.astype(np.int64),
        fcol.astype(np.int32),
        frow.astype(np.int32),
        smin,
        smax,
        np.asarray(areas, dtype=np.uint8)[tri],
    )


def _pack_payload(smin, smax, area):
    """A fragment's heights and area in one integer: smin | smax << 13 | area << 26 (heights
    reach SPAN_MAX_HEIGHT = 8191, 13 bits); uint32 when every area fits Recast's 6 bits."""
    dtype = np.uint32 if int(np.max(area, initial=0)) < 64 else np.uint64
    payload = np.asarray(smin).astype(dtype)
    payload |= np.asarray(smax).astype(dtype) << dtype(13)
    payload |= np.asarray(area).astype(dtype) << dtype(26)
    return payload


def _unpack_payload(payload):
    """int16 smin, int16 smax, uint8 area of `_pack_payload` payloads."""
    return (
        (payload & 0x1FFF).astype(np.int16),
        ((payload >> 13) & 0x1FFF).astype(np.int16),
        (payload >> 26).astype(np.uint8),
    )


def _position_bits(width, height):
    """Low bits of an int64 sort key left for a fragment's position, below its column."""
    return 63 - max(width * height - 1, 1).bit_length()


def _sort_key_and_payload(areas, width, height):
    """A `_clip_pieces` finish giving, per fragment, an int64 sort key (column ``ix + iy *
    width`` in the high bits, the position in its piece in the low ``shift`` bits) and its
    `_pack_payload`. Returns (finish, shift)."""
    areas = np.asarray(areas, dtype=np.uint8)
    shift = _position_bits(width, height)

    def finish(tri, row, col, smin, smax):
        column = row * width
        column += col
        # Sorted here, on the clipping thread (NumPy sorts without the GIL): `_merge_pieces`
        # then cuts every piece into column ranges by binary search, and each range's slices
        # are sorted runs that its stable sort (a merge sort that finds runs) joins in one or
        # two passes. The payloads stay where the keys point.
        key = _sorted_column_keys(column, width * height, shift)
        return key, _pack_payload(smin, smax, areas[tri])

    return finish, shift


def _sorted_column_keys(column, n_cols: int, shift: int):
    """The sort keys of fragments in columns ``column`` (int64 in [0, n_cols), in the order
    given): column << shift | position, sorted, so grouped by column and in the order given
    within one. ``shift``: `_position_bits` of the grid [Limit: positions < 2**shift].

    The keys are unique (their positions differ), so any sort gives this one order: NumPy's
    default sort of int64 (vectorized quicksort) takes 0.6 ms for dungeon's 150k fragments,
    where the stable order by two radix passes over 16-bit digits of the column took 1.1 ms
    (and 18 against 9 ms for 1M fragments in one radix pass)."""
    n_cols = int(n_cols)
    if column.shape[0] and n_cols > 1 << (63 - shift):
        raise ValueError(f"{n_cols:,} columns leave no room for {shift} position bits")
    key = column << shift
    key |= np.arange(column.shape[0], dtype=np.int64)
    key.sort()
    return key


def _snap_heights(tri, row, col, span_min, span_max, by, ich):
    """Drop cell polygons wholly below or above the grid; clamp and snap the rest to cell
    heights as Recast: floor(min * ich) and ceil(max * ich), max at least min + 1, both within
    [0, 8191]. Returns tri, row, col as given (the kept ones) and uint16 smin, smax."""
    keep = ~((span_max < 0) | (span_min > by))
    if not keep.all():
        tri, row, col, span_min, span_max = (a[keep] for a in (tri, row, col, span_min, span_max))
    # Both are at least 0 once clamped, so only the upper bound needs clipping; and the
    # integer conversion truncates, which for values >= 0 is the floor.
    smin = np.minimum(np.maximum(span_min, F32(0)) * ich, F32(SPAN_MAX_HEIGHT))
    smax = np.minimum(np.ceil(np.minimum(span_max, by) * ich), F32(SPAN_MAX_HEIGHT))
    smin = smin.astype(np.uint16)
    smax = np.minimum(np.maximum(smax.astype(np.uint16), smin + np.uint16(1)), SPAN_MAX_HEIGHT)
    return tri, row, col, smin, smax.astype(np.uint16, copy=False)


def _pad(array, slots):
    """A slot-major (K, N) array with at least ``slots`` rows (zeros added)."""
    if array.shape[0] >= slots:
        return array
    out = np.zeros((slots, array.shape[1]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


def _empty_fragments():
    return (
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.uint16),
        np.zeros(0, dtype=np.uint16),
        np.zeros(0, dtype=np.uint8),
    )


def merge_fragments(
    width: int, height: int, ix, iy, smin, smax, area, merge_threshold: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merge fragments into the solid spans of each column, in the order given (Recast's addSpan).

    Fragments must be in triangle order. A fragment merges with every span it overlaps or
    touches (closed test); the merged span takes the union. Its area is the fragment's area,
    max'ed with each merged span's area whose top is at most ``merge_threshold`` below the
    fragment's top. [Units: ch] for heights and threshold (walkable_climb) [Limit: >= 0];
    every fragment's smax >= its smin (as the rasterizer makes them: at least smin + 1).
    Returns col_start int64 (w*h+1,), smin uint16, smax uint16, area uint8.
    """
    if np.any(np.asarray(smax) < np.asarray(smin)):
        raise ValueError("a fragment's smax lies below its smin")
    shift = _position_bits(width, height)
    column = np.asarray(ix, dtype=np.int64) + np.asarray(iy, dtype=np.int64) * width
    piece = (_sorted_column_keys(column, width * height, shift), _pack_payload(smin, smax, area))
    return _merge_pieces(width * height, [piece], shift, merge_threshold)


def _merge_pieces(n_cols, pieces, shift, merge_threshold):
    """`merge_fragments` on `_sort_key_and_payload` pieces: per piece, int64 keys (column <<
    shift | position in the piece) sorted, and the `_pack_payload` payloads the positions
    point at; the pieces in triangle order.

    The pieces are never joined: column ranges of about `CHUNK_FRAGMENTS` fragments are merged
    one at a time (on `WORKERS` threads), each from its slices of every piece, re-keyed by
    position in the range (piece after piece, so a column's fragments keep triangle order)
    and sorted there. The range's state stays cache-sized, and no array as large as all the
    fragments is made: on large scenes first touching fresh memory costs as much as the
    arithmetic (on this project's VMs about 2 ms per MB once freed memory went back to the
    host). A range never splits a column, so the result is the same."""
    pieces = [(keys, payload) for keys, payload in pieces if keys.shape[0]]
    total = sum(keys.shape[0] for keys, _ in pieces)
    if total >= 1 << shift:
        raise MemoryError(f"{total:,} fragments exceed the sort key's {shift} position bits")
    # Each piece cut at `MERGE_BLOCKS` column block boundaries (one searchsorted per piece);
    # ranges are runs of blocks holding about CHUNK_FRAGMENTS fragments.
    block_cols = max(1, -(-n_cols // MERGE_BLOCKS))
    n_blocks = -(-n_cols // block_cols)
    # Inner boundaries only: a key of column n_cols may not fit 63 bits.
    block_keys = np.arange(1, n_blocks, dtype=np.int64) * block_cols << shift
    cuts = np.zeros((len(pieces), n_blocks + 1), dtype=np.int64)
    for p, (keys, _) in enumerate(pieces):
        cuts[p, 1:-1] = keys.searchsorted(block_keys)
        cuts[p, -1] = keys.shape[0]
    per_block = (cuts[:, 1:] - cuts[:, :-1]).sum(axis=0)
    filled = np.cumsum(per_block)
    marks = np.arange(1, -(-total // CHUNK_FRAGMENTS), dtype=np.int64) * CHUNK_FRAGMENTS
    bounds = np.unique(np.concatenate([[0], np.searchsorted(filled, marks) + 1, [n_blocks]]))
    ranges = [
        (int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
        if filled[hi - 1] > (filled[lo - 1] if lo else 0)
    ]  # fmt: skip
    position_mask = (1 << shift) - 1
    column_mask = np.int64(~position_mask)

    def merge_range(block_range):
        first_block, end_block = block_range
        lo, hi = cuts[:, first_block], cuts[:, end_block]
        key_parts, payload_parts = [], []
        for p in np.flatnonzero(hi > lo).tolist():
            part = pieces[p][0][lo[p] : hi[p]]
            key_parts.append(part)
            payload_parts.append(pieces[p][1][part & position_mask])
        keys = np.concatenate(key_parts) if len(key_parts) > 1 else key_parts[0].copy()
        del key_parts
        keys &= column_mask
        keys |= np.arange(keys.shape[0], dtype=np.int64)
        keys.sort(kind="stable")  # the pieces' sorted runs merged (keys are unique)
        payload = np.concatenate(payload_parts)
        del payload_parts
        col = keys >> shift
        spans = _unpack_payload(payload[keys & position_mask])
        del keys, payload
        return _merge_sorted(col, *spans, merge_threshold)

    merged = threads.map_pieces(merge_range, ranges, WORKERS, min_pieces=3)
    # Span counts at column + 1, summed in place: col_start without a dense count array.
    col_start = np.zeros(n_cols + 1, dtype=np.int64)
    parts = []
    for used_cols, per_used, *spans in merged:
        col_start[used_cols + 1] = per_used
        parts.append(spans)
    np.cumsum(col_start, out=col_start)
    if not parts:
        empty = np.zeros(0, dtype=np.uint16)
        return col_start, empty, empty.copy(), np.zeros(0, dtype=np.uint8)
    out_min, out_max, out_area = (np.concatenate(p) for p in zip(*parts, strict=True))
    return col_start, out_min, out_max, out_area


def _count_per_column(mask):
    """int64 (n,): True entries per column of a bool (slots, n) array (slots < 2**16)."""
    return np.add.reduce(mask.view(np.uint8), axis=0, dtype=np.uint16).astype(np.int64)


def _fold_contained(col, f_min, f_max, f_area):
    """Fold each fragment lying within the previous one of its column into that one's area.

    After the previous fragment is added, its span covers the contained one, which then merges
    with that span alone, at the same top, so it only raises the span's area (the threshold is
    never negative): adding the previous fragment with the max of both areas is the same. By
    induction a whole run of fragments each inside the one before folds into the run's first.
    Cuts the merge's rounds (dungeon: 149 to 55 fragments in the fullest column).

    Returns the remaining fragments' col, min, max, area and where each column's first of them
    is (int64, ascending).
    """
    same_col = col[1:] == col[:-1]
    contained = same_col & (f_min[1:] >= f_min[:-1]) & (f_max[1:] <= f_max[:-1])
    # A fragment left starts a column when the one before it does not share its column: that
    # one is the previous fragment left or one folded into it, in the same column.
    column_start = np.concatenate(([True], ~same_col))[: col.shape[0]]  # none when empty
    del same_col
    if not contained.any():
        return col, f_min, f_max, f_area, np.flatnonzero(column_start)
    kept = np.concatenate(([True], ~contained))
    starts = np.flatnonzero(kept)
    area = f_area.take(starts)
    # Most runs hold one fragment: the folded ones raise their run's area one by one, not a
    # reduceat over every run (a third of the merge's time on nav_test).
    folded = np.flatnonzero(contained)
    folded += 1
    run = np.cumsum(kept, dtype=np.int64)
    run -= 1
    np.maximum.at(area, run.take(folded), f_area.take(folded))
    first = np.flatnonzero(column_start.take(starts))
    return col.take(starts), f_min.take(starts), f_max.take(starts), area, first


def _first_coverers(first, per_col, f_min, f_max):
    """bool per fragment: it is the first of its column to cover some unit of height.

    A fragment that is not lies inside the union of its column's earlier fragments, which is
    then one span (a covered interval is connected): adding it only raises that span's area
    (see `_fold_contained`). Columns are given by ``first`` and ``per_col`` (fragments grouped
    by column, in order within one); heights [Units: ch] as int16/int32/int64, smax > smin.

    The earliest fragment covering each unit [h, h + 1) of a column is a range-minimum update
    of the fragment's position over [smin, smax): each range is written as two (overlapping)
    blocks of the largest power-of-two length that fits, one table row per block length, and
    the rows are pushed down from the longest blocks to single units. Memory: 4 bytes per unit
    and table row, the units being the columns' height ranges (the caller bounds them).
    """
    n_cols = first.shape[0]
    lowest = np.minimum.reduceat(f_min, first)
    highest = np.maximum.reduceat(f_max, first)
    n_units = (highest - lowest).astype(np.int64)
    unit_base = np.cumsum(n_units) - n_units
    length = (f_max - f_min).astype(np.int32)
    level = _LOG2[length]
    n_levels = int(level.max()) + 1
    stride = int(n_units.sum()) + (1 << (n_levels - 1))
    # int32 indices (half the memory traffic) unless the table is too large for them.
    index = np.int32 if n_levels * stride < 1 << 31 else np.int64
    owner = np.repeat(np.arange(n_cols, dtype=index), per_col)
    position = np.arange(f_min.shape[0], dtype=np.int32)
    position -= first.astype(np.int32)[owner]
    table = np.full(n_levels * stride, np.iinfo(np.int32).max, dtype=np.int32)
    start = (unit_base - lowest).astype(index)[owner]
    start += f_min
    start += level.astype(index, copy=False) * index(stride)
    np.minimum.at(table, start, position)
    start += length
    start -= _POW2[level]
    np.minimum.at(table, start, position)
    table = table.reshape(n_levels, stride)
    for k in range(n_levels - 1, 0, -1):
        half = 1 << (k - 1)
        np.minimum(table[k - 1], table[k], out=table[k - 1])
        np.minimum(table[k - 1, half:], table[k, :-half], out=table[k - 1, half:])
    earliest = table[0, : stride - (1 << (n_levels - 1))]
    covered = earliest != np.iinfo(np.int32).max
    unit_owner = np.repeat(np.arange(n_cols), n_units)
    is_first = np.zeros(f_min.shape[0], dtype=bool)
    is_first[first[unit_owner[covered]] + earliest[covered]] = True
    return is_first


#: floor(log2(n)) and 2**floor(log2(n)) for span lengths n in 1..SPAN_MAX_HEIGHT.
_LOG2 = np.zeros(SPAN_MAX_HEIGHT + 1, dtype=np.int32)
_LOG2[1:] = [n.bit_length() - 1 for n in range(1, SPAN_MAX_HEIGHT + 1)]
_POW2 = np.int32(1) << np.arange(16, dtype=np.int32)


def _split_dense(col, f_min, f_max, f_area, first, per_col):
    """Columns with many fragments, split into the fragments that change the column's shape
    and the rest, which only raise the area of the span holding them.

    ``first`` and ``per_col``: each column's first fragment and fragment count. Returns None
    when no column is split (none has `DENSE_COLUMN_FRAGMENTS` fragments in a height range
    small enough); else the shaping fragments' col, min, max, area; the others before their
    column's last shaping one: col, min, area and how many shaping fragments of their column
    come before them; the others after it: col, min, area. Only columns whose height range
    [Units: ch] is at most `DENSE_UNITS_PER_FRAGMENT` times their fragment count are split,
    which bounds `_first_coverers`' table at 4 bytes x 14 rows per height unit.
    """
    dense = per_col >= DENSE_COLUMN_FRAGMENTS
    if not dense.any():
        return None
    dense_per = per_col[dense]
    in_dense = np.repeat(dense, per_col)
    d_min, d_max = f_min[in_dense], f_max[in_dense]
    d_first = np.cumsum(dense_per) - dense_per
    height_range = np.maximum.reduceat(d_max, d_first) - np.minimum.reduceat(d_min, d_first)
    small = height_range <= dense_per * DENSE_UNITS_PER_FRAGMENT
    # A fragment without height (smax <= smin, never from the rasterizer) covers no unit but
    # may still add a span: such columns are not split.
    small &= ~np.logical_or.reduceat(d_max <= d_min, d_first)
    if not small.all():
        if not small.any():
            return None
        in_small = np.repeat(small, dense_per)
        in_dense[in_dense] = in_small
        d_min, d_max = d_min[in_small], d_max[in_small]
        dense_per = dense_per[small]
        d_first = np.cumsum(dense_per) - dense_per
    shaping = np.ones(col.shape[0], dtype=bool)
    shaping[in_dense] = _first_coverers(d_first, dense_per, d_min, d_max)
    # Shaping fragments up to and including each one, per column.
    before = np.cumsum(shaping, dtype=np.int32 if col.shape[0] < 1 << 31 else np.int64)
    before -= np.repeat(before[first] - 1, per_col)
    n_shaping = np.repeat(before[first + per_col - 1], per_col)
    # The rest: those after the column's last shaping fragment (most of them) go into the
    # final spans; the others into the state after the round of the shaping one before them.
    between = ~shaping
    between &= before < n_shaping
    tail = ~shaping
    tail ^= between
    return (
        col[shaping], f_min[shaping], f_max[shaping], f_area[shaping],
        col[between], f_min[between], f_area[between], before[between],
        col[tail], f_min[tail], f_area[tail],
    )  # fmt: skip


def _merge_sorted(col, f_min, f_max, f_area, merge_threshold):
    """`merge_fragments` on fragments sorted by column (triangle order within one), each with
    smax >= smin.

    Returns the used columns (ascending), their span counts, and smin uint16, smax uint16,
    area uint8 of their spans in column order, bottom-up.

    Round k adds the k-th fragment of every column. In dense columns (overlapping geometry)
    only the fragments that change the column's shape go through the rounds (`_split_dense`);
    each of the others lies inside one span of the column as it stands after the shaping
    fragments before it, and is folded into that span's area right after the round that adds
    the last of them (after the column's last shaping fragment: into its final spans). So the
    rounds number the shaping fragments of the fullest column (for random overlap, tens
    however many fragments lie on top of each other), and never more than SPAN_MAX_HEIGHT:
    a shaping fragment is the first to cover one of the column's height units, and a column
    is split unless it has fewer fragments than its height range has units.
    """
    col, f_min, f_max, f_area, first = _fold_contained(col, f_min, f_max, f_area)
    per_col = np.diff(first, append=col.shape[0])
    split = None
    if int(per_col.max(initial=0)) >= DENSE_COLUMN_FRAGMENTS:
        split = _split_dense(col, f_min, f_max, f_area, first, per_col)
    if split is not None:
        col, f_min, f_max, f_area, in_col, in_min, in_area, in_after, *tail = split
        first = np.flatnonzero(np.diff(col, prepend=-1))
        per_col = np.diff(first, append=col.shape[0])
    used_cols = col[first]
    # Columns with the most fragments first: round k then works on a prefix of the state and
    # reads the k-th fragment of each of those columns at first + k.
    by_count = _descending_order(per_col)
    used_cols, first, per_col = used_cols[by_count], first[by_count], per_col[by_count]
    n_used = used_cols.shape[0]
    max_rounds = int(per_col[0]) if n_used else 0
    active_counts = np.searchsorted(-per_col, -np.arange(1, max_rounds + 1), side="right")
    if split is not None:
        # The folded-in fragments by round (the round after which they go in), each with the
        # state row of its column.
        row_of = np.empty(n_used, dtype=np.int64)
        row_of[by_count] = np.arange(n_used)
        in_row = row_of[np.searchsorted(used_cols[row_of], in_col)]
        in_round = in_after - 1
        # A radix sort when the rounds fit 16 bits.
        order = np.argsort(
            in_round.astype(np.uint16) if max_rounds < 1 << 16 else in_round, kind="stable"
        )
        in_row, in_min, in_area = in_row[order], in_min[order], in_area[order]
        in_bounds = np.searchsorted(in_round[order], np.arange(max_rounds + 1))

    # Empty slots hold EMPTY as both bottom and top: never below a fragment, always above it.
    # The state is slot-major, (slots, columns): every operation then loops over the
    # columns, not over a column's few slots (12x faster for a comparison on 4 slots).
    slots = 4
    st_min = np.full((slots, n_used), EMPTY, dtype=np.int16)
    st_max = np.full((slots, n_used), EMPTY, dtype=np.int16)
    st_area = np.zeros((slots, n_used), dtype=np.uint8)
    st_n = np.zeros(n_used, dtype=np.int64)
    finished: list[tuple] = []
    columns = np.arange(n_used)
    slot = np.arange(slots)[:, None]
    for k in range(max_rounds):
        nk = int(active_counts[k])
        here = first[:nk] + k
        fmin, fmax, farea = f_min.take(here), f_max.take(here), f_area.take(here)
        if k == 0:
            st_min[0, :nk], st_max[0, :nk], st_area[0, :nk] = fmin, fmax, farea
            st_n[:nk] = 1
            if split is not None:
                _fold_into_spans(st_max, st_area, in_row, in_min, in_area, in_bounds, k)
            continue
        cur_n = st_n[:nk]
        # Rows at or above ``top`` are empty (EMPTY, never below or touching a fragment) in
        # every active column: the tests read the rows below it only.
        top = int(np.maximum.reduce(cur_n))
        if top >= slots:
            # Only the active prefix grows; columns already finished keep their narrower state.
            finished.append((nk, st_min.shape[1], st_min[:, nk:], st_max[:, nk:], st_area[:, nk:]))
            slots *= 2
            slot = np.arange(slots)[:, None]
            st_min = _widen(st_min[:, :nk], slots, EMPTY)
            st_max = _widen(st_max[:, :nk], slots, EMPTY)
            st_area = _widen(st_area[:, :nk], slots, 0)
        width = st_min.shape[1]
        cur_min, cur_max, cur_area = st_min[:top, :nk], st_max[:top, :nk], st_area[:top, :nk]
        # Spans are sorted and apart, so the ones the fragment touches are a contiguous run
        # [n_below, n_reach).
        n_below = _count_per_column(cur_max < fmin)
        n_reach = _count_per_column(cur_min <= fmax)
        n_over = n_reach - n_below
        touched = n_over > 0
        # Slots read and written through flat indices (slot * width + column): 1-D takes and
        # puts are several times faster than 2-D fancy indexing. The state has room to spare
        # (st_n < slots), so n_below is a real slot: the first touched span's, or where the
        # fragment goes.
        flat_min, flat_max, flat_area = st_min.reshape(-1), st_max.reshape(-1), st_area.reshape(-1)
        at_first = n_below * width
        at_first += columns[:nk]
        first_min = flat_min.take(at_first)
        first_max = flat_max.take(at_first)
        # No selections by ``touched`` (a call each, and three passes): a fragment touching
        # nothing has the span at n_below (if any) above it, whose bottom is above the
        # fragment's top and so its bottom (smax >= smin), so the minimum is the fragment's
        # bottom; its "last touched" slot n_reach - 1 is a span below it or, at n_reach = 0,
        # the state's last row (a negative flat index), either read and multiplied by 0, and
        # heights are >= 0.
        new_min = np.minimum(fmin, first_min)
        last_at = n_over - 1
        last_at *= width
        last_at += at_first
        last_max = flat_max.take(last_at)
        last_max *= touched
        new_max = np.maximum(fmax, last_max)
        # Area: the fragment's, max'ed with each touched span's whose top is within the
        # threshold. Usually one span is touched; several only when the fragment joins spans.
        kept = fmax - first_max <= merge_threshold
        kept &= touched
        new_area = flat_area.take(at_first)
        new_area *= kept
        np.maximum(farea, new_area, out=new_area)
        joins = (n_over > 1).nonzero()[0]
        if joins.shape[0]:
            keep_area = (
                (slot[:top] > n_below[joins])
                & (slot[:top] < n_reach[joins])
                & (fmax[joins] - cur_max[:, joins] <= merge_threshold)
            )
            more = (cur_area[:, joins] * keep_area).max(axis=0)
            new_area[joins] = np.maximum(new_area[joins], more)
        # A fragment that touches exactly one span replaces it in place; only the others
        # (an insertion, or several spans joined) shift the slots above: slot s reads slot s
        # below n_below, else s - 1 + n_over.
        shift = ((n_over != 1) & (n_below < cur_n)).nonzero()[0]
        if shift.shape[0]:
            # Rows up to ``top`` only: the ones above stay empty (an insertion fills row top
            # at most).
            rows = slot[: top + 1]
            step = n_over.take(shift)
            step -= 1
            src = (rows >= n_below.take(shift)) * step
            src += rows
            np.minimum(src, slots - 1, out=src)
            src *= width
            src += shift
            # Written through flat indices too: NumPy's 2-D fancy assignment (st[:, shift])
            # costs about twice the 1-D one here.
            dest = rows * width + shift
            flat_min[dest] = flat_min.take(src)
            flat_max[dest] = flat_max.take(src)
            flat_area[dest] = flat_area.take(src)
        flat_min[at_first] = new_min
        flat_max[at_first] = new_max
        flat_area[at_first] = new_area
        cur_n -= n_over
        cur_n += 1
        if split is not None:
            _fold_into_spans(st_max, st_area, in_row, in_min, in_area, in_bounds, k)

    # Spans into column order, one slot at a time: slot s of every state column holding more
    # than s spans goes to that column's first output place + s (the state's columns are in
    # fragment-count order; most hold one or two spans).
    in_column_order = np.empty(n_used, dtype=np.int64)
    in_column_order[by_count] = np.arange(n_used)
    per_used = st_n[in_column_order]
    start_by_column = np.cumsum(per_used) - per_used
    dest_first = start_by_column[by_count]
    total_spans = int(per_used.sum())
    out_min = np.empty(total_spans, dtype=np.uint16)
    out_max = np.empty(total_spans, dtype=np.uint16)
    out_area = np.empty(total_spans, dtype=np.uint8)
    segments = [(0, st_min.shape[1], st_min, st_max, st_area)] + finished[::-1]
    for start, end, seg_min, seg_max, seg_area in segments:
        n_here, at = st_n[start:end], dest_first[start:end]
        # Every used column holds a span in slot 0.
        out_min[at], out_max[at], out_area[at] = seg_min[0], seg_max[0], seg_area[0]
        for s in range(1, seg_min.shape[0]):
            cols = (n_here > s).nonzero()[0]
            if not cols.shape[0]:
                break
            place = at[cols] + s
            out_min[place] = seg_min[s].take(cols)
            out_max[place] = seg_max[s].take(cols)
            out_area[place] = seg_area[s].take(cols)
    used_cols = used_cols[in_column_order]
    if split is not None and tail[0].shape[0]:
        # The fragments after their column's last shaping one lie inside its final spans:
        # the first one whose top is not below the fragment's bottom, found by one search
        # over (column, top) keys, ascending as the spans are in column order, bottom-up.
        tail_col, tail_min, tail_area = tail
        scale = SPAN_MAX_HEIGHT + 1
        span_key = np.repeat(used_cols * scale, per_used)
        span_key += out_max
        tail_key = tail_col * scale
        tail_key += tail_min
        np.maximum.at(out_area, np.searchsorted(span_key, tail_key), tail_area)
    return used_cols, per_used, out_min, out_max, out_area


def _fold_into_spans(st_max, st_area, rows, f_min, f_area, bounds, k):
    """Raise the area of the span holding each fragment of round ``k`` (``rows``, ``f_min``,
    ``f_area`` sorted by round, round k at bounds[k]:bounds[k + 1]). Each lies inside one
    span: the first whose top is not below the fragment's bottom."""
    here = slice(bounds[k], bounds[k + 1])
    rows = rows[here]
    if not rows.shape[0]:
        return
    below = _count_per_column(st_max[:, rows] < f_min[here])
    below *= st_max.shape[1]
    below += rows
    np.maximum.at(st_area.reshape(-1), below, f_area[here])


def _widen(array, slots, fill):
    """A slot-major (slots, n) state with more slots (``fill`` in the new ones)."""
    out = np.full((slots, array.shape[1]), fill, dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


def rasterize_triangles(
    verts,
    tris,
    areas,
    bmin,
    bmax,
    cs,
    ch,
    width,
    height,
    merge_threshold,
    *,
    ctx: BuildContext | None = None,
) -> Heightfield:
    """Rasterize triangles into a new solid `Heightfield` (Recast's rcRasterizeTriangles).

    verts float32 (n, 3) Z-up [Units: wu]; tris int32 (m, 3); areas uint8 (m,); bmin/bmax the
    grid corners [Units: wu]; cs, ch [Units: wu] [Limit: > 0]; width, height [Units: cells];
    merge_threshold = walkable_climb [Units: ch].
    """
    finish, shift = _sort_key_and_payload(areas, width, height)
    pieces = _clip_pieces(verts, tris, bmin, bmax, cs, ch, width, height, finish)
    col_start, smin, smax, area = _merge_pieces(width * height, pieces, shift, merge_threshold)
    return Heightfield(
        int(width),
        int(height),
        np.asarray(bmin, dtype=F32).copy(),
        np.asarray(bmax, dtype=F32).copy(),
        F32(cs),
        F32(ch),
        col_start,
        smin,
        smax,
        area,
    )


__all__ = [
    "NULL_AREA",
    "WALKABLE_AREA",
    "mark_walkable_triangles",
    "merge_fragments",
    "rasterize_fragments",
    "rasterize_triangles",
]
