"""Region contours: the outline of every region, traced and simplified (Recast's rcBuildContours).

Input: a `CompactHeightfield` with regions (``chf.reg``) and areas. Output: a `ContourSet` in
Recast's integer form, one contour per traced region boundary, in Recast's order.

Contour vertex layout (both simplified ``verts`` and raw ``rverts``): int32 (k, 4) rows of
Recast's four integers, **in Recast's column order**, so they compare directly with Recast's
arrays:

- column 0: x, the corner's grid x [Units: cells]
- column 1: the corner's height (Recast's y) [Units: ch]
- column 2: the corner's grid row, which is **VoxNav's iy** (Recast's z) [Units: cells]
- column 3: the region id across the edge that starts at this vertex (0 = wall) in the low 16
  bits (`RC_CONTOUR_REG_MASK`), ORed with `RC_BORDER_VERTEX` (a vertex on a tile border that
  the polygon mesh removes) and `RC_AREA_BORDER` (the edge separates two area types).

A corner (x, y) is the grid point at the lower-left of cell (x, y); a region boundary runs
along cell edges, so contour vertices lie on the (width+1) x (height+1) corner lattice.

The rule, as Recast:

1. Every span of a real region (reg != 0, no `BORDER_REG` flag) marks each direction whose
   neighbour is in another region (or not connected) as a boundary edge (vectorized over all
   spans at once).
2. Spans are scanned in storage order; the first span with unvisited boundary edges (and not
   boundary on all four sides) starts a walk at its lowest unvisited direction. The walk follows
   the boundary keeping the region on its right, emitting one raw vertex per boundary edge:
   the edge's clockwise-end corner, at the highest floor of the up to four spans around the
   corner. Here the walk's step rule is evaluated for all boundary edges at once (each edge's
   successor), the cycles are labelled by pointer jumping, and only the order of the walk is
   followed in Python; an exact sequential walker is the fallback for malformed
   connectivity (a successor map that is not a permutation, or a walk over 40000 steps).
3. ``simplifyContour``: mandatory vertices where the neighbour region or area border changes
   (or the lower-left and upper-right corners of an island), then the farthest raw vertex is
   inserted while it strays more than ``max_error`` from a wall or area-border segment
   (float32 arithmetic, as Recast), then wall edges longer than ``max_edge_len`` are split at
   the middle raw vertex. Consecutive vertices at the same (x, grid row) are dropped.
4. Contours with fewer than three vertices are dropped. Clockwise (negative area) contours
   are holes; each hole is bridged into its region's outline from its lowest leftmost vertex
   to the nearest visible outline vertex, and the hole keeps 0 simplified vertices.

The simplification and hole merging are sequential, order-sensitive insertion algorithms
over one contour at a time (tens of contours, tens of vertices each), so they loop in Python
per contour; the per-span and per-edge work is vectorized, and so are the inner scans (the
farthest raw vertex from a segment, the cone and crossing tests of a hole's bridge).

Checked bit for bit against the reference dumps and against Recast's own source compiled on
hundreds of random heightfields (holes, tile borders, area borders, one-way links). The one
thing that cannot be matched in general: with two or more holes in a region, Recast may read
an unwritten slot of a scratch buffer (see `_merge_region_holes`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .compact import BORDER_REG, CompactHeightfield, bits_of_4, per_direction
from .context import BuildContext
from .errors import VoxNavError

#: Flag in a contour vertex's column 3: on a tile border, removed by the polygon mesh.
RC_BORDER_VERTEX = 0x10000
#: Flag in a contour vertex's column 3: the edge separates two different area types.
RC_AREA_BORDER = 0x20000
#: Mask of the neighbour region id in a contour vertex's column 3.
RC_CONTOUR_REG_MASK = 0xFFFF
#: build_flags: split long wall (impassable) edges at ``max_edge_len``.
RC_CONTOUR_TESS_WALL_EDGES = 0x01
#: build_flags: split long edges between area types at ``max_edge_len``.
RC_CONTOUR_TESS_AREA_EDGES = 0x02
#: Simplify every contour at once (`_simplify_all`); False: one by one (`_simplify`, the
#: literal port and the tests' oracle).
BATCH_SIMPLIFY = True

#: Per region boundary edge (`_raw_contours`), on top of the contours stage's per-span
#: estimate: stacked checkerboards of one-span regions traced 51-98 bytes an edge over it.
#: [Units: bytes]
CONTOURS_BYTES_PER_EDGE = 128

#: Recast's walkContour step limit (``while (++iter < 40000)``): at most 39999 steps per walk.
_WALK_MAX_STEPS = 39999

ProgressFn = Callable[[float, str], None]


@dataclass
class ContourSet:
    """Simplified and raw contours in CSR layout (contour c: ``verts[verts_start[c]:
    verts_start[c+1]]``), in Recast's order and Recast's integer vertex form (see the module
    docstring: x, height, grid row = VoxNav iy, neighbour region | flags).

    A hole merged into its region's outline keeps its raw vertices but has 0 simplified ones,
    as in Recast.
    """

    #: int32 (N, 4) simplified vertices of all contours. [Units: cells, ch, cells, -]
    verts: np.ndarray
    #: int64 (nconts + 1,) start of each contour in ``verts``.
    verts_start: np.ndarray
    #: int32 (M, 4) raw (traced) vertices of all contours, same columns.
    rverts: np.ndarray
    #: int64 (nconts + 1,) start of each contour in ``rverts``.
    rverts_start: np.ndarray
    #: uint16 (nconts,) region id of each contour.
    reg: np.ndarray
    #: uint8 (nconts,) area id of each contour.
    area: np.ndarray
    #: float32 (3,) Z-up world bounds, less the border on x and y as Recast. [Units: wu]
    bmin: np.ndarray
    bmax: np.ndarray
    cs: np.float32
    ch: np.float32
    #: Grid size without the border. [Units: cells]
    width: int
    height: int
    #: [Units: cells]
    border_size: int
    #: The max_error the contours were simplified with. [Units: cells]
    max_error: np.float32

    @property
    def nconts(self) -> int:
        return int(self.reg.shape[0])

    @property
    def nverts(self) -> np.ndarray:
        """int32 (nconts,) simplified vertex count per contour (Recast's cont_nverts)."""
        return np.diff(self.verts_start).astype(np.int32)

    @property
    def nrverts(self) -> np.ndarray:
        """int32 (nconts,) raw vertex count per contour (Recast's cont_nrverts)."""
        return np.diff(self.rverts_start).astype(np.int32)

    def contour_verts(self, c: int) -> np.ndarray:
        """int32 (k, 4) simplified vertices of contour ``c`` (a view)."""
        return self.verts[self.verts_start[c] : self.verts_start[c + 1]]

    def contour_rverts(self, c: int) -> np.ndarray:
        """int32 (k, 4) raw vertices of contour ``c`` (a view)."""
        return self.rverts[self.rverts_start[c] : self.rverts_start[c + 1]]


# ----------------------------------------------------------------------------------------------
# Per-span and per-edge work (vectorized)


def boundary_flags(chf: CompactHeightfield) -> np.ndarray:
    """uint8 (n,) bit d set when span's direction d leaves its region (Recast's contour flags).

    Spans with no region or a `BORDER_REG` region get 0. The neighbour region of a direction
    that is not connected counts as 0.
    """
    reg = np.asarray(chf.reg)
    reg_x = np.append(reg, reg.dtype.type(0))  # a missing link (-1) reads region 0
    leaves = per_direction(np.not_equal, reg_x.take(np.asarray(chf.neighbor)), reg)
    flags = bits_of_4(leaves)  # bit d: direction d
    # A product by the kept mask, not a boolean assignment (several times slower where the
    # mask changes from span to span).
    flags *= (reg != 0) & ((reg & BORDER_REG) == 0)
    return flags


def _edge_vertices(
    chf: CompactHeightfield, span: np.ndarray, d: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Raw contour vertex of each boundary edge (span, d), as Recast's walkContour emits it.

    Returns (int64 (m, 4) rows (corner x, corner height via getCornerHeight, corner row,
    neighbour region | RC_BORDER_VERTEX), int64 (m,) the neighbour span's area or -1 when not
    connected). `RC_AREA_BORDER` is added per walk: Recast compares the neighbour's area with
    the area of the span the walk *started* from.
    """
    # Only the boundary edges' spans and their neighbours are read: the fields are gathered
    # as they are and widened afterwards (widening whole fields first cost more than the
    # rest of this function on large grids).
    # (span, direction) read as 4 * span + direction: 1-D takes, not 2-D fancy indexing.
    nb = np.asarray(chf.neighbor).reshape(-1)
    y = np.asarray(chf.y)
    reg = np.asarray(chf.reg)
    area = np.asarray(chf.area)

    def height(spans):
        return y.take(spans).astype(np.int64)

    def full(spans):
        out = reg.take(spans).astype(np.int64)
        out |= area.take(spans).astype(np.int64) << 16
        return out

    dp = (d + 1) & 3

    h = height(span)
    r0 = full(span)
    a = nb.take(span * 4 + d).astype(np.int64)
    ha = a >= 0
    ac = np.maximum(a, 0)
    h = np.where(ha, np.maximum(h, height(ac)), h)
    r1 = np.where(ha, full(ac), 0)
    a2 = np.where(ha, nb.take(ac * 4 + dp), -1)
    ha2 = a2 >= 0
    h = np.where(ha2, np.maximum(h, height(np.maximum(a2, 0))), h)
    r2 = np.where(ha2, full(np.maximum(a2, 0)), 0)
    b = nb.take(span * 4 + dp).astype(np.int64)
    hb = b >= 0
    bc = np.maximum(b, 0)
    h = np.where(hb, np.maximum(h, height(bc)), h)
    r3 = np.where(hb, full(bc), 0)
    b2 = np.where(hb, nb.take(bc * 4 + d), -1)
    hb2 = b2 >= 0
    h = np.where(hb2, np.maximum(h, height(np.maximum(b2, 0))), h)
    r2 = np.where(hb2, full(np.maximum(b2, 0)), r2)

    regs = (r0, r1, r2, r3)
    border_vertex = np.zeros(span.shape[0], dtype=bool)
    no_zeros = (r0 != 0) & (r1 != 0) & (r2 != 0) & (r3 != 0)
    for j in range(4):
        ra, rb, rc, rd = regs[j], regs[(j + 1) & 3], regs[(j + 2) & 3], regs[(j + 3) & 3]
        two_same_exts = ((ra & rb & BORDER_REG) != 0) & (ra == rb)
        two_ints = ((rc | rd) & BORDER_REG) == 0
        ints_same_area = (rc >> 16) == (rd >> 16)
        border_vertex |= two_same_exts & two_ints & ints_same_area & no_zeros

    x = np.asarray(chf.span_x).take(span).astype(np.int64)
    z = np.asarray(chf.span_y).take(span).astype(np.int64)
    px = x + ((d == 1) | (d == 2))
    pz = z + ((d == 0) | (d == 1))
    r = np.where(ha, reg.take(ac).astype(np.int64), 0) | np.where(
        border_vertex, RC_BORDER_VERTEX, 0
    )
    nb_area = np.where(ha, area.take(ac).astype(np.int64), -1)
    return np.stack([px, h, pz, r], axis=1), nb_area


def _edge_successors(
    chf: CompactHeightfield, flags: np.ndarray, span: np.ndarray, d: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Next boundary edge of every boundary edge along walkContour, and the walk steps taken.

    Returns (succ int64 (m,) edge index, steps int64 (m,)), or None when a walk would step
    through a missing connection or not settle in a few steps (malformed connectivity).
    """
    nb = np.asarray(chf.neighbor).reshape(-1)  # (span, direction) at 4 * span + direction
    m = span.shape[0]
    cur = span.copy()
    cdir = (d + 1) & 3
    steps = np.ones(m, dtype=np.int64)
    active = np.arange(m)
    for _ in range(16):
        hit = ((flags[cur[active]] >> cdir[active]) & 1) != 0
        active = active[~hit]
        if active.size == 0:
            break
        nxt = nb.take(cur[active] * 4 + cdir[active])
        if (nxt < 0).any():
            return None
        cur[active] = nxt
        cdir[active] = (cdir[active] + 3) & 3
        steps[active] += 1
    else:
        return None
    keys = span * 4 + d  # sorted ascending: edges come from np.nonzero in row-major order
    succ = np.searchsorted(keys, cur * 4 + cdir)
    return succ, steps


def _cycle_labels(succ: np.ndarray) -> np.ndarray:
    """int64 (m,) smallest edge index of each edge's cycle (succ must be a permutation)."""
    m = succ.shape[0]
    label = np.arange(m, dtype=np.int64)
    jump = succ.copy()
    span = 1
    while span < m:
        # Takes: 1-D gathers by int64 indices, cheaper than fancy indexing.
        np.minimum(label, label.take(jump), out=label)
        jump = jump.take(jump)
        span *= 2
    return label


class _WalkOrder(NamedTuple):
    """The walks' edge sequences, walk after walk in Recast's scan order, none empty."""

    every: np.ndarray  # int64: the edges of all walks
    start: np.ndarray  # int64 (walks + 1,): where each walk's edges start in ``every``


def _joined_walks(walks: list[np.ndarray]) -> _WalkOrder:
    """Edge sequences one per walk as a `_WalkOrder` (empty ones dropped)."""
    walks = [seq for seq in walks if seq.shape[0]]
    lengths = np.fromiter((seq.shape[0] for seq in walks), np.int64, len(walks))
    start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    every = np.concatenate(walks).astype(np.int64) if walks else np.zeros(0, dtype=np.int64)
    return _WalkOrder(every, start)


def _walk_order_fast(
    flags: np.ndarray, span: np.ndarray, d: np.ndarray, succ: np.ndarray, steps: np.ndarray
) -> _WalkOrder | None:
    """Edge sequences of the walks, in Recast's scan order, from the successor permutation
    (joined: no array per walk).

    Returns None when some walk would hit Recast's 40000-step limit (use the exact walker).
    """
    m = span.shape[0]
    if m == 0:
        return _joined_walks([])
    label = _cycle_labels(succ)
    # Cycles numbered by their smallest edge (each cycle's label), in that order.
    is_root = label == np.arange(m)
    n_cycles = int(np.count_nonzero(is_root))
    cyc = (np.cumsum(is_root) - 1)[label]
    # Edges grouped by cycle, in storage order (span, then direction) within each cycle.
    order = np.argsort(cyc, kind="stable")
    group_start = np.zeros(n_cycles + 1, dtype=np.int64)
    np.cumsum(np.bincount(cyc, minlength=n_cycles), out=group_start[1:])
    # The scan below reads a few edges per cycle: items, not whole lists.
    span_at = span.take(order).item
    order_at = order.item
    first_edges = order[group_start[:-1]]
    # Four-sided single spans are never walked (flags == 0xf is skipped by the scan).
    heap = [
        (int(sp), c, int(g))
        for c, (sp, g) in enumerate(zip(span[first_edges], group_start[:-1], strict=True))
        if flags[sp] != 0xF
    ]
    heapq.heapify(heap)
    starts: list[int] = []
    while heap:
        s = heap[0][0]
        contenders = []
        while heap and heap[0][0] == s:
            contenders.append(heapq.heappop(heap))
        # The scan walks the span's lowest unvisited direction; the other cycles through this
        # span are started later, at their next span.
        best = min(contenders, key=lambda ev: d[order_at(ev[2])])
        starts.append(order_at(best[2]))
        for ev in contenders:
            if ev is best:
                continue
            _, c, p = ev
            end = int(group_start[c + 1])
            while p < end and span_at(p) == s:
                p += 1
            if p < end:
                heapq.heappush(heap, (span_at(p), c, p))
    if not starts:
        return _joined_walks([])
    # Each walk is its start's cycle read along succ from the start (a cycle has one start at
    # most). Every edge's place in its walk is found at once: the cycle is cut before its
    # start (its last edge points to itself) and pointer jumping counts each edge's steps to
    # that last edge (Wyllie's list ranking: rounds logarithmic in the longest walk).
    first = np.asarray(starts, dtype=np.int64)
    sizes = np.diff(group_start)
    walk_of = np.full(n_cycles, -1, dtype=np.int64)
    walk_of[cyc[first]] = np.arange(first.shape[0])
    before = np.empty(m, dtype=np.int64)
    before[succ] = np.arange(m)
    last = before[first]
    jump = succ.copy()
    jump[last] = last
    to_last = np.ones(m, dtype=np.int64)
    to_last[last] = 0
    lengths = sizes[cyc[first]]
    reach = 1
    longest = int(lengths.max())
    while reach < longest:
        to_last += to_last.take(jump)
        jump = jump.take(jump)
        reach *= 2
    walk_start = np.zeros(first.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=walk_start[1:])
    member = np.flatnonzero(walk_of[cyc] >= 0)
    place = walk_start[walk_of[cyc[member]]] + (sizes[cyc[member]] - 1 - to_last[member])
    sequence = np.empty(int(walk_start[-1]), dtype=np.int64)
    sequence[place] = member
    if int(np.add.reduceat(steps[sequence], walk_start[:-1]).max()) > _WALK_MAX_STEPS:
        return None
    return _WalkOrder(sequence, walk_start)


def _walk_order_exact(
    chf: CompactHeightfield,
    flags: np.ndarray,
    span: np.ndarray,
    d: np.ndarray,
    cut: list[int] | None = None,
) -> list[np.ndarray]:
    """Recast's scan and walkContour step by step (slow; the fallback and the test oracle).

    Visits only spans with boundary edges (the others are skipped by Recast's scan anyway).
    ``cut`` (if given) receives the start span of every walk stopped by Recast's step limit.
    """
    nb = np.asarray(chf.neighbor).astype(np.int64).tolist()
    fl = flags.astype(np.int64).tolist()
    keys = span * 4 + d
    walks = []
    for i0 in np.unique(span).tolist():
        if fl[i0] == 0 or fl[i0] == 0xF:
            fl[i0] = 0
            continue
        i = i0
        direction = 0
        while (fl[i] & (1 << direction)) == 0:
            direction += 1
        start_dir = direction
        seq = []
        it = 0
        while True:
            it += 1
            if it >= _WALK_MAX_STEPS + 1:
                if cut is not None:
                    cut.append(i0)
                break
            if fl[i] & (1 << direction):
                seq.append(i * 4 + direction)
                fl[i] &= ~(1 << direction)
                direction = (direction + 1) & 3
            else:
                ni = nb[i][direction]
                if ni < 0:
                    break
                i = ni
                direction = (direction + 3) & 3
            if i == i0 and direction == start_dir:
                break
        walks.append(np.searchsorted(keys, np.asarray(seq, dtype=np.int64)))
    return walks


# ----------------------------------------------------------------------------------------------
# Per-contour work (sequential, small counts)


def _simplify(
    points: np.ndarray, max_error: np.float32, max_edge_len: int, build_flags: int
) -> list[list[int]]:
    """Recast's simplifyContour on one raw contour (int64 (pn, 4)); returns rows [x, y, z, f]."""
    pn = points.shape[0]
    pf = points[:, 3]
    regm = pf & RC_CONTOUR_REG_MASK
    abord = pf & RC_AREA_BORDER
    px_l = points[:, 0].tolist()
    py_l = points[:, 1].tolist()
    pz_l = points[:, 2].tolist()
    pf_l = pf.tolist()
    simp: list[list[int]] = []
    if (regm != 0).any():
        nxt = np.roll(np.arange(pn), -1)
        change = (regm != regm[nxt]) | (abord != abord[nxt])
        for i in np.nonzero(change)[0].tolist():
            simp.append([px_l[i], py_l[i], pz_l[i], i])
    if not simp:
        idx = np.arange(pn)
        lli = int(np.lexsort((idx, points[:, 2], points[:, 0]))[0])
        uri = int(np.lexsort((idx, -points[:, 2], -points[:, 0]))[0])
        simp.append([px_l[lli], py_l[lli], pz_l[lli], lli])
        simp.append([px_l[uri], py_l[uri], pz_l[uri], uri])

    fx = points[:, 0].astype(np.float32)
    fz = points[:, 2].astype(np.float32)
    tess_ok = (regm == 0) | (abord != 0)
    tess_ok_l = tess_ok.tolist()
    me = np.float32(max_error)
    max_err2 = me * me
    zero = np.float32(0)
    one = np.float32(1)
    i = 0
    while i < len(simp):
        ii = (i + 1) % len(simp)
        ax, az, ai = simp[i][0], simp[i][2], simp[i][3]
        bx, bz, bi = simp[ii][0], simp[ii][2], simp[ii][3]
        if bx > ax or (bx == ax and bz > az):
            ci = (ai + 1) % pn
            cnt = (bi - ci) % pn
            sel = (ci + np.arange(cnt)) % pn
        else:
            ci = (bi + pn - 1) % pn
            cnt = (ci - ai) % pn
            sel = (ci - np.arange(cnt)) % pn
            ax, bx = bx, ax
            az, bz = bz, az
        maxi = -1
        maxd = zero
        if tess_ok_l[ci] and cnt > 0:
            # distancePtSeg in float32, Recast's operation order.
            pqx = np.float32(bx - ax)
            pqz = np.float32(bz - az)
            dx = fx[sel] - np.float32(ax)
            dz = fz[sel] - np.float32(az)
            dd = pqx * pqx + pqz * pqz
            t = pqx * dx + pqz * dz
            if dd > zero:
                t = t / dd
            t = np.minimum(np.maximum(t, zero), one)
            ex = (np.float32(ax) + t * pqx) - fx[sel]
            ez = (np.float32(az) + t * pqz) - fz[sel]
            dist = ex * ex + ez * ez
            k = int(np.argmax(dist))
            if dist[k] > zero:
                maxd = dist[k]
                maxi = int(sel[k])
        if maxi != -1 and maxd > max_err2:
            simp.insert(i + 1, [px_l[maxi], py_l[maxi], pz_l[maxi], maxi])
        else:
            i += 1

    if max_edge_len > 0 and (
        build_flags & (RC_CONTOUR_TESS_WALL_EDGES | RC_CONTOUR_TESS_AREA_EDGES)
    ):
        max_len2 = max_edge_len * max_edge_len
        i = 0
        while i < len(simp):
            ii = (i + 1) % len(simp)
            ax, az, ai = simp[i][0], simp[i][2], simp[i][3]
            bx, bz, bi = simp[ii][0], simp[ii][2], simp[ii][3]
            maxi = -1
            ci = (ai + 1) % pn
            tess = (build_flags & RC_CONTOUR_TESS_WALL_EDGES and (pf_l[ci] & 0xFFFF) == 0) or (
                build_flags & RC_CONTOUR_TESS_AREA_EDGES and (pf_l[ci] & RC_AREA_BORDER)
            )
            if tess:
                dx = bx - ax
                dz = bz - az
                if dx * dx + dz * dz > max_len2:
                    n = bi + pn - ai if bi < ai else bi - ai
                    if n > 1:
                        if bx > ax or (bx == ax and bz > az):
                            maxi = (ai + n // 2) % pn
                        else:
                            maxi = (ai + (n + 1) // 2) % pn
            if maxi != -1:
                simp.insert(i + 1, [px_l[maxi], py_l[maxi], pz_l[maxi], maxi])
            else:
                i += 1

    for v in simp:
        ai = (v[3] + 1) % pn
        bi = v[3]
        v[3] = (pf_l[ai] & (RC_CONTOUR_REG_MASK | RC_AREA_BORDER)) | (pf_l[bi] & RC_BORDER_VERTEX)
    return simp


def _first_in_groups(starts: np.ndarray, n: int, keys: tuple) -> np.ndarray:
    """Per group of rows [starts[g], starts[g + 1]) (groups non-empty, n rows grouped), the
    row that sorts first by ``keys`` (np.lexsort order: the last key is the primary one)."""
    group = np.repeat(np.arange(starts.shape[0] - 1), np.diff(starts))
    order = np.lexsort((*keys, group))
    first = np.ones(n, dtype=bool)
    first[1:] = group[order][1:] != group[order][:-1]
    return order[first]


def _simplify_all(
    points: np.ndarray,
    pstart: np.ndarray,
    max_error: np.float32,
    max_edge_len: int,
    build_flags: int,
) -> tuple[np.ndarray, np.ndarray]:
    """`_simplify` of every raw contour at once: (int64 (m, 4) rows [x, y, z, flags] of all
    simplified contours, int64 (C + 1,) their offsets).

    points: int64 (N, 4) the raw contours concatenated; pstart: int64 (C + 1,) offsets (every
    contour non-empty). Recast inserts one point at a time, but whether a segment between two
    kept points is split, and where, depends on those two points only; so every segment of
    every contour is split in the same round, round after round, and the kept points are put
    back in contour order at the end. Equal to `_simplify` contour by contour.
    """
    ncont = pstart.shape[0] - 1
    total = points.shape[0]
    pn_c = np.diff(pstart)
    owner = np.repeat(np.arange(ncont), pn_c)
    local = np.arange(total) - pstart[owner]
    pf = points[:, 3]
    regm = pf & RC_CONTOUR_REG_MASK
    abord = pf & RC_AREA_BORDER
    nxt = pstart[owner] + (local + 1) % pn_c[owner]
    # Initial points: where the neighbour region or the area border changes; a contour with
    # none of them: its lower-left and upper-right points.
    has_reg = np.bincount(owner, weights=(regm != 0), minlength=ncont) > 0
    change = has_reg[owner] & ((regm != regm[nxt]) | (abord != abord[nxt]))
    n_change = np.bincount(owner, weights=change, minlength=ncont).astype(np.int64)
    plain = np.flatnonzero(n_change == 0)
    x, z = points[:, 0], points[:, 2]
    lower_left = upper_right = np.zeros(0, dtype=np.int64)
    if plain.size:
        prow = np.flatnonzero(n_change[owner] == 0)  # rows of those contours, grouped
        pgroups = np.concatenate([[0], np.cumsum(pn_c[plain])])
        lower_left = prow[_first_in_groups(pgroups, prow.size, (local[prow], z[prow], x[prow]))]
        upper_right = prow[_first_in_groups(pgroups, prow.size, (local[prow], -z[prow], -x[prow]))]
    init = np.concatenate([np.flatnonzero(change), lower_left, upper_right])  # global rows
    init_owner = owner[init]
    # Contour order of the initial points: change points in index order; lli then uri.
    init_rank = np.concatenate(
        [local[np.flatnonzero(change)], np.zeros(plain.size, np.int64),
         np.ones(plain.size, np.int64)]
    )  # fmt: skip
    order = np.lexsort((init_rank, init_owner))
    init, init_owner = init[order], init_owner[order]
    n_init = np.bincount(init_owner, minlength=ncont)
    istart = np.concatenate([[0], np.cumsum(n_init)])
    pos = np.arange(init.size) - istart[init_owner]
    seg_a = init
    seg_b = init[istart[init_owner] + (pos + 1) % n_init[init_owner]]
    fx = points[:, 0].astype(np.float32)
    fz = points[:, 2].astype(np.float32)
    tess_ok = (regm == 0) | (abord != 0)
    max_err2 = np.float32(max_error) * np.float32(max_error)
    kept = [init]
    zero, one = np.float32(0), np.float32(1)
    while seg_a.size:
        c = owner[seg_a]
        base, pn = pstart[c], pn_c[c]
        ai, bi = local[seg_a], local[seg_b]
        ax, az, bx, bz = x[seg_a], z[seg_a], x[seg_b], z[seg_b]
        forward = (bx > ax) | ((bx == ax) & (bz > az))
        ci = np.where(forward, (ai + 1) % pn, (bi - 1) % pn)
        cnt = np.where(forward, (bi - ci) % pn, (ci - ai) % pn)
        cnt = np.where(tess_ok[base + ci], cnt, 0)
        sx = np.where(forward, ax, bx).astype(np.float32)  # the segment, lower end first
        sz = np.where(forward, az, bz).astype(np.float32)
        ex_ = np.where(forward, bx, ax).astype(np.float32)
        ez_ = np.where(forward, bz, az).astype(np.float32)
        live = (cnt > 0).nonzero()[0]
        split = np.zeros(seg_a.size, dtype=bool)
        mid = np.zeros(seg_a.size, dtype=np.int64)
        if live.size:
            k = cnt[live]
            seg = live.repeat(k)
            q = np.arange(int(k.sum())) - (k.cumsum() - k).repeat(k)
            step = np.where(forward[seg], q, -q)
            cand = base[seg] + (ci[seg] + step) % pn[seg]
            # distancePtSeg in float32, Recast's operation order.
            pqx = ex_[seg] - sx[seg]
            pqz = ez_[seg] - sz[seg]
            dx = fx[cand] - sx[seg]
            dz = fz[cand] - sz[seg]
            dd = pqx * pqx + pqz * pqz
            t = pqx * dx + pqz * dz
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(dd > zero, t / dd, t)
            t = np.minimum(np.maximum(t, zero), one)
            ex = (sx[seg] + t * pqx) - fx[cand]
            ez = (sz[seg] + t * pqz) - fz[cand]
            dist = ex * ex + ez * ez
            # The first largest distance in walking order.
            kstart = np.concatenate([[0], np.cumsum(k)])[:-1]
            maxd = np.maximum.reduceat(dist, kstart)
            first_q = np.minimum.reduceat(
                np.where(dist == np.repeat(maxd, k), q, cnt.max()), kstart
            )
            best = kstart + first_q
            grow = (maxd > zero) & (maxd > max_err2)
            split[live[grow]] = True
            mid[live[grow]] = cand[best[grow]]
        s_idx = split.nonzero()[0]
        kept.append(mid[s_idx])
        seg_a, seg_b = (
            np.concatenate([seg_a[s_idx], mid[s_idx]]),
            np.concatenate([mid[s_idx], seg_b[s_idx]]),
        )
    if max_edge_len > 0 and (
        build_flags & (RC_CONTOUR_TESS_WALL_EDGES | RC_CONTOUR_TESS_AREA_EDGES)
    ):
        rows = np.concatenate(kept)
        rows = rows[np.lexsort(((local[rows] - local[_first_of(rows, owner, init, istart)])
                                % pn_c[owner[rows]], owner[rows]))]  # fmt: skip
        r_owner = owner[rows]
        r_start = np.concatenate([[0], np.cumsum(np.bincount(r_owner, minlength=ncont))])
        r_pos = np.arange(rows.size) - r_start[r_owner]
        r_n = np.diff(r_start)[r_owner]
        seg_a = rows
        seg_b = rows[r_start[r_owner] + (r_pos + 1) % r_n]
        max_len2 = max_edge_len * max_edge_len
        while seg_a.size:
            c = owner[seg_a]
            base, pn = pstart[c], pn_c[c]
            ai, bi = local[seg_a], local[seg_b]
            fci = pf[base + (ai + 1) % pn]
            tess = np.zeros(seg_a.size, dtype=bool)
            if build_flags & RC_CONTOUR_TESS_WALL_EDGES:
                tess |= (fci & 0xFFFF) == 0
            if build_flags & RC_CONTOUR_TESS_AREA_EDGES:
                tess |= (fci & RC_AREA_BORDER) != 0
            ddx = x[seg_b] - x[seg_a]
            ddz = z[seg_b] - z[seg_a]
            n = np.where(bi < ai, bi + pn - ai, bi - ai)
            grow = tess & (ddx * ddx + ddz * ddz > max_len2) & (n > 1)
            forward = (x[seg_b] > x[seg_a]) | ((x[seg_b] == x[seg_a]) & (z[seg_b] > z[seg_a]))
            mid = base + np.where(forward, (ai + n // 2) % pn, (ai + (n + 1) // 2) % pn)
            s_idx = grow.nonzero()[0]
            kept.append(mid[s_idx])
            seg_a, seg_b = (
                np.concatenate([seg_a[s_idx], mid[s_idx]]),
                np.concatenate([mid[s_idx], seg_b[s_idx]]),
            )
    rows = np.concatenate(kept)
    first = _first_of(rows, owner, init, istart)
    rows = rows[np.lexsort(((local[rows] - local[first]) % pn_c[owner[rows]], owner[rows]))]
    c = owner[rows]
    after = pstart[c] + (local[rows] + 1) % pn_c[c]
    out = points.take(rows, axis=0)
    out[:, 3] = (pf[after] & (RC_CONTOUR_REG_MASK | RC_AREA_BORDER)) | (pf[rows] & RC_BORDER_VERTEX)
    ostart = np.concatenate([[0], np.cumsum(np.bincount(c, minlength=ncont))])
    return out, ostart


def _first_of(rows, owner, init, istart):
    """Per row, its contour's first initial point (where Recast's simplified list starts)."""
    first_init = np.full(owner.max(initial=0) + 1, -1, dtype=np.int64)
    first_init[owner[init[istart[:-1]]]] = init[istart[:-1]]
    return first_init[owner[rows]]


def _remove_degenerate_segments(simp: list[list[int]]) -> None:
    """Drop a vertex equal (x and grid row) to the next one, in place, Recast's single pass."""
    i = 0
    while i < len(simp):
        ni = i + 1 if i + 1 < len(simp) else 0
        if simp[i][0] == simp[ni][0] and simp[i][2] == simp[ni][2]:
            del simp[i]
        i += 1


def _area_signs_negative(verts: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """calcAreaOfPolygon2D(v) < 0 (C's truncating (area + 1) / 2) of every contour: bool per
    contour of ``verts`` (rows x, y, z, flags; contour c at starts[c]:starts[c + 1], each of
    at least 3 rows)."""
    n = starts.shape[0] - 1
    if n == 0:
        return np.zeros(0, dtype=bool)
    x = verts[:, 0].astype(np.int64)
    z = verts[:, 2].astype(np.int64)
    # Each vertex with the one before it in its contour (the last one before the first).
    prev = np.arange(-1, x.shape[0] - 1)
    prev[starts[:-1]] = starts[1:] - 1
    area = np.add.reduceat(x * z.take(prev) - x.take(prev) * z, starts[:-1])
    # C truncates toward zero: (area + 1) / 2 < 0 exactly when area + 1 <= -2.
    return area + 1 <= -2


def _contour_rows(conts: list[list[list[int]]]) -> tuple[np.ndarray, np.ndarray]:
    """Contours as lists of [x, y, z, flags] vertices into the contour set's rows: (verts
    int32 (V, 4), verts_start int64 (C + 1,))."""
    verts_start = np.zeros(len(conts) + 1, dtype=np.int64)
    verts_start[1:] = np.cumsum([len(c) for c in conts])
    verts = np.asarray([v for c in conts for v in c], dtype=np.int32).reshape(-1, 4)
    return verts, verts_start


def _assemble_contours(simple_rows, sstart, all_points, pstart, first_span, reg, area, bs):
    """The batched simplification's contours as the contour set holds them, before holes:
    degenerate segments removed (Recast's single pass), contours under 3 vertices dropped with
    their raw points, and both moved off the tile border ``bs``.

    simple_rows int64 (S, 4) and sstart (W + 1,): every walk's simplified vertices; all_points
    int64 (P, 4) and pstart: their raw points; first_span (W,): each walk's first span.
    Returns (verts int32, verts_start, rverts int32, rverts_start, region ids, area ids) of
    the contours kept, in walk order.
    """
    n_walks = sstart.shape[0] - 1
    sizes = np.diff(sstart)
    owner = np.repeat(np.arange(n_walks), sizes)
    local = np.arange(simple_rows.shape[0]) - sstart[owner]
    nxt = sstart[owner] + (local + 1) % sizes[owner]
    x, z = simple_rows[:, 0], simple_rows[:, 2]
    keep = np.ones(simple_rows.shape[0], dtype=bool)
    # Contours with a vertex equal (x and row) to the next one (rare) take Recast's pass.
    for w in np.unique(owner[(x == x.take(nxt)) & (z == z.take(nxt))]).tolist():
        lo, hi = int(sstart[w]), int(sstart[w + 1])
        # The pass on (x, y, z, row) lists: the rows it leaves are the ones kept.
        simp = np.column_stack([simple_rows[lo:hi, :3], np.arange(lo, hi)]).tolist()
        _remove_degenerate_segments(simp)
        keep[lo:hi] = False
        keep[[v[3] for v in simp]] = True
    left = np.bincount(owner[keep], minlength=n_walks)
    good = left >= 3
    keep &= good[owner]
    # Row selections by compress/take: NumPy's 2-D boolean and fancy row indexing is several
    # times slower.
    verts = simple_rows.compress(keep, axis=0).astype(np.int32)
    rverts = all_points.compress(np.repeat(good, np.diff(pstart)), axis=0).astype(np.int32)
    if bs > 0:
        verts[:, 0] -= bs
        verts[:, 2] -= bs
        rverts[:, 0] -= bs
        rverts[:, 2] -= bs
    verts_start = np.zeros(int(good.sum()) + 1, dtype=np.int64)
    np.cumsum(left[good], out=verts_start[1:])
    rverts_start = np.zeros(verts_start.shape[0], dtype=np.int64)
    np.cumsum(np.diff(pstart)[good], out=rverts_start[1:])
    spans = first_span[good]
    return verts, verts_start, rverts, rverts_start, reg[spans].astype(np.int64), area[spans]


def segment_hits_edges(
    x0: int,
    z0: int,
    x1: int,
    z1: int,
    ax: np.ndarray,
    az: np.ndarray,
    bx: np.ndarray,
    bz: np.ndarray,
    consider: np.ndarray | None = None,
    loose: bool = False,
) -> bool:
    """Does segment (x0, z0)-(x1, z1) cross any edge (ax, az)-(bx, bz)? (Recast's test).

    Integer points on (x, grid row). Edges with an endpoint equal to either end of the segment
    are ignored, as are edges where ``consider`` is False. A crossing is a proper intersection
    (no three points collinear, strict sides), or unless ``loose``, an endpoint lying on the
    other segment (Recast's intersect(); loose is intersectProp() only). Vectorized over edges.
    """
    hit = segments_cross(x0, z0, x1, z1, ax, az, bx, bz, loose)
    if consider is not None:
        hit &= consider
    return bool(hit.any())


def segments_cross(x0, z0, x1, z1, ax, az, bx, bz, loose: bool = False) -> np.ndarray:
    """bool per pair: segment (x0, z0)-(x1, z1) crosses edge (ax, az)-(bx, bz) as in
    `segment_hits_edges` (every argument an integer array or scalar, broadcast together)."""
    a1 = (x1 - x0) * (az - z0) - (ax - x0) * (z1 - z0)  # area2(d0, d1, a)
    a2 = (x1 - x0) * (bz - z0) - (bx - x0) * (z1 - z0)  # area2(d0, d1, b)
    a3 = (bx - ax) * (z0 - az) - (x0 - ax) * (bz - az)  # area2(a, b, d0)
    a4 = (bx - ax) * (z1 - az) - (x1 - ax) * (bz - az)  # area2(a, b, d1)
    zero = (a1 == 0) | (a2 == 0) | (a3 == 0) | (a4 == 0)
    hit = ~zero & ((a1 < 0) != (a2 < 0)) & ((a3 < 0) != (a4 < 0))
    if loose or not zero.any():
        return hit
    # A shared end makes one of the areas 0, so the shared-end rule and Recast's between()
    # (an end on the other segment: collinear, within its x or z range) only concern the
    # (few) pairs with a zero area.
    at = np.nonzero(zero)
    x0, z0, x1, z1, ax, az, bx, bz = (
        arr[at] for arr in np.broadcast_arrays(x0, z0, x1, z1, ax, az, bx, bz)
    )
    a1, a2, a3, a4 = a1[at], a2[at], a3[at], a4[at]
    skip = (
        ((ax == x0) & (az == z0))
        | ((ax == x1) & (az == z1))
        | ((bx == x0) & (bz == z0))
        | ((bx == x1) & (bz == z1))
    )
    on_x = x0 != x1
    lo = np.where(on_x, np.minimum(x0, x1), np.minimum(z0, z1))
    hi = np.where(on_x, np.maximum(x0, x1), np.maximum(z0, z1))
    c0, c1 = np.where(on_x, ax, az), np.where(on_x, bx, bz)
    touch = ((a1 == 0) & (lo <= c0) & (c0 <= hi)) | ((a2 == 0) & (lo <= c1) & (c1 <= hi))
    vert = ax == bx
    mnx, mxx = np.minimum(ax, bx), np.maximum(ax, bx)
    mnz, mxz = np.minimum(az, bz), np.maximum(az, bz)
    b3 = np.where(vert, (mnz <= z0) & (z0 <= mxz), (mnx <= x0) & (x0 <= mxx))
    b4 = np.where(vert, (mnz <= z1) & (z1 <= mxz), (mnx <= x1) & (x1 <= mxx))
    touch |= ((a3 == 0) & b3) | ((a4 == 0) & b4)
    hit[at] = touch & ~skip
    return hit


def _in_cone_all(vx: np.ndarray, vz: np.ndarray, px: int, pz: int) -> np.ndarray:
    """bool (n,): Recast's inCone(j, outline, p) for every outline vertex j at once."""
    nx, nz = np.roll(vx, -1), np.roll(vz, -1)  # next
    qx, qz = np.roll(vx, 1), np.roll(vz, 1)  # previous

    def area2(ax, az, bx, bz, cx, cz):
        return (bx - ax) * (cz - az) - (cx - ax) * (bz - az)

    convex = area2(qx, qz, vx, vz, nx, nz) <= 0
    in_convex = (area2(vx, vz, px, pz, qx, qz) < 0) & (area2(px, pz, vx, vz, nx, nz) < 0)
    in_reflex = ~((area2(vx, vz, px, pz, nx, nz) <= 0) & (area2(px, pz, vx, vz, qx, qz) <= 0))
    return np.where(convex, in_convex, in_reflex)


def _merge_region_holes(conts: list[list[list[int]]], outline: int, holes: list[int]) -> None:
    """Recast's mergeRegionHoles: bridge every hole into the outline, in place on ``conts``.

    Holes are taken by their lowest leftmost vertex, left to right; each is joined to the
    nearest outline vertex in whose cone it lies and whose bridge crosses neither the outline
    nor a hole not merged yet (trying the hole's next vertices if none is clear). The cone and
    crossing tests run over all edges at once.

    Recast passes ``diags[i].vert`` (i = the hole's index, not the diagonal's) as the outline
    vertex whose edges the intersection test skips; that is kept, with the buffer persisting
    across the holes of one region. Slots Recast never wrote (uninitialised memory from
    rcAlloc) read as 0 here, which is what a fresh heap block holds in a checked build of
    Recast; it only matters for a region whose hole index exceeds its diagonal count.
    """
    info = []
    for h in holes:
        v = np.asarray(conts[h], dtype=np.int64)
        # First index of the minimum (x, then row), as Recast's strict comparisons.
        leftmost = int(np.lexsort((np.arange(v.shape[0]), v[:, 2], v[:, 0]))[0])
        info.append((int(v[leftmost, 0]), int(v[leftmost, 2]), leftmost, h))
    info.sort(key=lambda t: (t[0], t[1]))  # stable, like glibc's merge-sort qsort
    max_verts = len(conts[outline]) + sum(len(conts[h]) for h in holes)
    diags_vert = np.zeros(max_verts, dtype=np.int64)
    # Edges of the holes in merge order, so "holes not merged yet" is a suffix.
    hx0, hz0, hx1, hz1, hstart = [], [], [], [], [0]
    for _, _, _, h in info:
        v = np.asarray(conts[h], dtype=np.int64).reshape(-1, 4)
        hx0.append(v[:, 0])
        hz0.append(v[:, 2])
        hx1.append(np.roll(v[:, 0], -1))
        hz1.append(np.roll(v[:, 2], -1))
        hstart.append(hstart[-1] + v.shape[0])
    hx0a, hz0a, hx1a, hz1a = (np.concatenate(a) for a in (hx0, hz0, hx1, hz1))
    for i, (_, _, leftmost, h) in enumerate(info):
        hole = conts[h]
        out = np.asarray(conts[outline], dtype=np.int64).reshape(-1, 4)
        ox, oz = out[:, 0], out[:, 2]
        ox1, oz1 = np.roll(ox, -1), np.roll(oz, -1)
        n_out = out.shape[0]
        ks = np.arange(n_out)
        ks1 = np.where(ks + 1 < n_out, ks + 1, 0)
        rest = slice(hstart[i], hstart[-1])
        index = -1
        best = leftmost
        for _ in range(len(hole)):
            cx, cz = hole[best][0], hole[best][2]
            cand = np.nonzero(_in_cone_all(ox, oz, cx, cz))[0]
            dist = (ox[cand] - cx) ** 2 + (oz[cand] - cz) ** 2
            cand = cand[np.argsort(dist, kind="stable")]
            diags_vert[: cand.shape[0]] = cand
            skip_v = int(diags_vert[i])
            consider = (ks != skip_v) & (ks1 != skip_v)
            index = -1
            for j in cand.tolist():
                px, pz = int(ox[j]), int(oz[j])
                if segment_hits_edges(px, pz, cx, cz, ox, oz, ox1, oz1, consider):
                    continue
                if segment_hits_edges(
                    px, pz, cx, cz, hx0a[rest], hz0a[rest], hx1a[rest], hz1a[rest]
                ):
                    continue
                index = j
                break
            if index != -1:
                break
            best = (best + 1) % len(hole)
        if index == -1:
            continue  # Recast logs a warning and leaves the hole unmerged.
        ol = conts[outline]
        na, nb = len(ol), len(hole)
        merged = [list(ol[(index + k) % na]) for k in range(na + 1)]
        merged += [list(hole[(best + k) % nb]) for k in range(nb + 1)]
        conts[outline] = merged
        conts[h] = []


def _check_contour_input(chf: CompactHeightfield, max_error: float, max_edge_len: int) -> None:
    if chf.reg is None:
        raise VoxNavError(
            "build_contours needs regions: run the region stage on the compact "
            "heightfield first (chf.reg is None)"
        )
    if not np.isfinite(max_error) or max_error < 0:
        raise VoxNavError(f"max_error must be a finite number >= 0 cells, got {max_error!r}")
    if int(max_edge_len) != max_edge_len or max_edge_len < 0:
        raise VoxNavError(f"max_edge_len must be a whole number >= 0 cells, got {max_edge_len!r}")
    n = chf.span_count
    for name in ("reg", "area", "neighbor", "span_x", "span_y"):
        arr = np.asarray(getattr(chf, name))
        if arr.shape[0] != n:
            raise VoxNavError(f"chf.{name} has {arr.shape[0]} rows but chf has {n} spans")


class _RawContours(NamedTuple):
    """Every region outline of a compact heightfield, walked: ``points`` int64 (P, 4) rows
    [x, y, z, flags] of all walks concatenated (flags: neighbour region | area border),
    ``pstart`` int64 (W + 1,) each walk's offset, ``first_span`` int64 (W,) each walk's first
    span."""

    points: np.ndarray
    pstart: np.ndarray
    first_span: np.ndarray


def _raw_contours(chf: CompactHeightfield, ctx: BuildContext | None = None) -> _RawContours:
    """Recast's walkContour of every region outline of ``chf`` (regions built). ``ctx``'s
    ``memory_check`` (if any) is asked for the boundary edges' arrays once they are counted,
    and ``ctx`` is warned (`CUT_SHORT_WARNING`) when Recast's step limit stops a walk."""
    flags = boundary_flags(chf)
    border = np.flatnonzero(flags)  # spans with a boundary edge (few): their edges in order
    rows, edir = np.nonzero((flags[border, None] >> np.arange(4, dtype=np.uint8)) & 1)
    if ctx is not None and ctx.memory_check is not None and rows.shape[0]:
        # Most levels have few (the per-span estimate covers them); thousands of one-span
        # regions have four a span (30 stacked checkerboards traced 55 % over without this).
        ctx.memory_check(
            "contours",
            rows.shape[0] * CONTOURS_BYTES_PER_EDGE,
            f"{rows.shape[0]:,} region boundary edges of {chf.span_count:,} spans",
        )
    espan = border[rows].astype(np.int64)
    edir = edir.astype(np.int64)
    evert, enb_area = _edge_vertices(chf, espan, edir)

    walks = None
    cut: list[int] = []
    res = _edge_successors(chf, flags, espan, edir)
    if res is not None:
        succ, steps = res
        if np.bincount(succ, minlength=espan.shape[0]).max(initial=1) == 1:
            walks = _walk_order_fast(flags, espan, edir, succ, steps)
    if walks is None:  # the walks stopped by Recast's step limit are the ones it names
        walks = _joined_walks(_walk_order_exact(chf, flags, espan, edir, cut))
    every, pstart = walks
    area = np.asarray(chf.area)
    first_span = espan[every[pstart[:-1]]]
    all_points = evert.take(every, axis=0)
    start_area = np.repeat(area[first_span].astype(np.int64), np.diff(pstart))
    nba = enb_area[every]
    all_points[:, 3] |= np.where((nba >= 0) & (nba != start_area), RC_AREA_BORDER, 0)
    if cut and ctx is not None:
        ctx.warn(CUT_SHORT_WARNING)
    return _RawContours(all_points, pstart, first_span)


#: What a bake is told when an outline was longer than Recast's walk (`_RawContours`).
CUT_SHORT_WARNING = (
    "a region's outline is longer than Recast's contour walk (40,000 steps): Recast cuts it "
    "short there, and so does VoxNav to match it, so the navmesh along that outline is "
    "incomplete and the contour stage slow (it walks step by step): bake with tiles "
    "(tile_size), or a larger cell_size"
)


def _contours_one_by_one(
    chf: CompactHeightfield,
    raw: _RawContours,
    max_error32: np.float32,
    max_edge_len: int,
    build_flags: int,
    progress: ProgressFn | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[int], list[int]]:
    """The literal simplification, outline by outline (`_simplify`; `BATCH_SIMPLIFY` off):
    (verts, verts_start, rverts, rverts_start, region ids, area ids) before holes."""
    reg, area = np.asarray(chf.reg), np.asarray(chf.area)
    bs = int(chf.border_size)
    conts: list[list[list[int]]] = []
    raws: list[np.ndarray] = []
    cregs: list[int] = []
    careas: list[int] = []
    n_walks = raw.pstart.shape[0] - 1
    for k in range(n_walks):
        points = raw.points[raw.pstart[k] : raw.pstart[k + 1]]
        simp = _simplify(points, max_error32, max_edge_len, build_flags)
        _remove_degenerate_segments(simp)
        if len(simp) >= 3:
            s0 = int(raw.first_span[k])
            if bs > 0:
                for v in simp:
                    v[0] -= bs
                    v[2] -= bs
                points = points.copy()
                points[:, 0] -= bs
                points[:, 2] -= bs
            conts.append(simp)
            raws.append(points)
            cregs.append(int(reg[s0]))
            careas.append(int(area[s0]))
        if progress and (k & 31) == 31:
            progress(0.3 + 0.6 * k / max(n_walks, 1), "contours: simplifying")
    verts, verts_start = _contour_rows(conts)
    rverts_start = np.zeros(len(conts) + 1, dtype=np.int64)
    rverts_start[1:] = np.cumsum([r.shape[0] for r in raws])
    rverts = np.concatenate(raws).astype(np.int32) if raws else np.zeros((0, 4), dtype=np.int32)
    return verts, verts_start, rverts, rverts_start, cregs, careas


def _contour_set(
    chf: CompactHeightfield,
    simplified: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[int], list[int]],
    max_error32: np.float32,
) -> ContourSet:
    """``chf``'s contour set from its simplified outlines ((verts, verts_start, rverts,
    rverts_start, region ids, area ids)): holes bridged into their region's outline, bounds
    moved off the tile border."""
    verts, verts_start, rverts, rverts_start, cregs, careas = simplified
    bs = int(chf.border_size)
    # Holes: clockwise contours, bridged into their region's outline.
    negative = _area_signs_negative(verts, verts_start)
    if negative.any():
        outline_of: dict[int, int] = {}
        holes_of: dict[int, list[int]] = {}
        for c, neg in enumerate(negative.tolist()):
            if not neg:
                outline_of[cregs[c]] = c  # Recast logs an error on a second outline; last wins.
            else:
                holes_of.setdefault(cregs[c], []).append(c)
        merged = [r for r in sorted(holes_of) if r in outline_of]
        if merged:
            bounds = zip(verts_start[:-1], verts_start[1:], strict=True)
            conts = [verts[a:b].tolist() for a, b in bounds]
            for r in merged:
                _merge_region_holes(conts, outline_of[r], holes_of[r])
            verts, verts_start = _contour_rows(conts)
    bmin = np.asarray(chf.bmin, dtype=np.float32).copy()
    bmax = np.asarray(chf.bmax, dtype=np.float32).copy()
    if bs > 0:
        pad = np.float32(bs * np.float32(chf.cs))
        bmin[:2] += pad
        bmax[:2] -= pad
    return ContourSet(
        verts=verts,
        verts_start=verts_start,
        rverts=rverts,
        rverts_start=rverts_start,
        reg=np.asarray(cregs, dtype=np.uint16),
        area=np.asarray(careas, dtype=np.uint8),
        bmin=bmin,
        bmax=bmax,
        cs=np.float32(chf.cs),
        ch=np.float32(chf.ch),
        width=int(chf.width) - 2 * bs,
        height=int(chf.height) - 2 * bs,
        border_size=bs,
        max_error=max_error32,
    )


def _assembled(chf: CompactHeightfield, raw: _RawContours, simple_rows, sstart):
    """`_assemble_contours` of one compact heightfield's batched simplification, its region
    and area ids as lists."""
    verts, verts_start, rverts, rverts_start, cregs, careas = _assemble_contours(
        simple_rows, sstart, raw.points, raw.pstart, raw.first_span,
        np.asarray(chf.reg), np.asarray(chf.area), int(chf.border_size),
    )  # fmt: skip
    return verts, verts_start, rverts, rverts_start, cregs.tolist(), careas.tolist()


def build_contours(
    chf: CompactHeightfield,
    max_error: float,
    max_edge_len: int,
    build_flags: int = RC_CONTOUR_TESS_WALL_EDGES,
    *,
    progress: ProgressFn | None = None,
    ctx: BuildContext | None = None,
) -> ContourSet:
    """Trace and simplify the outline of every region (Recast's rcBuildContours).

    Parameters
    ----------
    chf:
        Compact heightfield with regions (``chf.reg`` uint16 (n,), 0 = none) and areas. Not
        modified.
    max_error:
        Largest distance a simplified wall edge may stray from the raw outline.
        [Units: cells] [Limit: >= 0] (NavConfig.derived().max_simplification_error)
    max_edge_len:
        Longest wall edge before it is split; 0 = no limit. [Units: cells] [Limit: >= 0]
    build_flags:
        `RC_CONTOUR_TESS_WALL_EDGES` and/or `RC_CONTOUR_TESS_AREA_EDGES`.
    progress:
        Optional ``progress(fraction in [0, 1], message)`` callback.

    Returns
    -------
    ContourSet with vertex rows (x, height, grid row = VoxNav iy, neighbour region | flags).
    """
    _check_contour_input(chf, max_error, max_edge_len)
    max_edge_len = int(max_edge_len)
    max_error32 = np.float32(max_error)
    if progress:
        progress(0.0, "contours: marking boundaries")
    raw = _raw_contours(chf, ctx)
    n_walks = raw.pstart.shape[0] - 1
    if progress:
        progress(0.3, f"contours: simplifying {n_walks} outlines")
    if BATCH_SIMPLIFY and n_walks:
        simple_rows, sstart = _simplify_all(
            raw.points, raw.pstart, max_error32, max_edge_len, build_flags
        )
        if progress:
            progress(0.9, "contours: simplified")
        simplified = _assembled(chf, raw, simple_rows, sstart)
    else:
        simplified = _contours_one_by_one(
            chf, raw, max_error32, max_edge_len, build_flags, progress
        )
    contours = _contour_set(chf, simplified, max_error32)
    if progress:
        progress(1.0, f"contours: {contours.nconts} contours")
    return contours


def build_contours_many(
    chfs: list[CompactHeightfield],
    max_error: float,
    max_edge_len: int,
    build_flags: int = RC_CONTOUR_TESS_WALL_EDGES,
    ctxs: list[BuildContext | None] | None = None,
) -> list[ContourSet]:
    """`build_contours` of several compact heightfields with the same settings (agents baked
    together, `core.agents`), each result equal to its own call: the outlines are walked per
    heightfield, and all of them are simplified at once (`_simplify_all` splits every segment
    of every outline in the same round, and an outline's splits read that outline only), so
    its rounds of NumPy calls are paid once. ``ctxs``: each heightfield's build context (its
    warnings), or None. Units and limits as `build_contours`."""
    ctxs = list(ctxs) if ctxs is not None else [None] * len(chfs)
    for chf in chfs:
        _check_contour_input(chf, max_error, max_edge_len)
    if not BATCH_SIMPLIFY:
        return [
            build_contours(chf, max_error, max_edge_len, build_flags, ctx=ctx)
            for chf, ctx in zip(chfs, ctxs, strict=True)
        ]
    max_edge_len = int(max_edge_len)
    max_error32 = np.float32(max_error)
    raws = [_raw_contours(chf, ctx) for chf, ctx in zip(chfs, ctxs, strict=True)]
    walk_counts = [raw.pstart.shape[0] - 1 for raw in raws]
    walk_offsets = np.concatenate([[0], np.cumsum(walk_counts)]).astype(np.int64)
    point_offsets = [0]
    for raw in raws:
        point_offsets.append(point_offsets[-1] + raw.points.shape[0])
    simple_rows = np.zeros((0, 4), dtype=np.int64)
    sstart = np.zeros(1, dtype=np.int64)
    if walk_offsets[-1]:
        pstart = np.concatenate(
            [[0]] + [raw.pstart[1:] + off for raw, off in zip(raws, point_offsets, strict=False)]
        ).astype(np.int64)
        simple_rows, sstart = _simplify_all(
            np.concatenate([raw.points for raw in raws]), pstart, max_error32, max_edge_len,
            build_flags,
        )  # fmt: skip
    out = []
    for i, (chf, raw) in enumerate(zip(chfs, raws, strict=True)):
        first, last = int(walk_offsets[i]), int(walk_offsets[i + 1])
        own = sstart[first : last + 1]
        rows = simple_rows[own[0] : own[-1]]
        out.append(_contour_set(chf, _assembled(chf, raw, rows, own - own[0]), max_error32))
    return out


__all__ = [
    "RC_AREA_BORDER",
    "RC_BORDER_VERTEX",
    "RC_CONTOUR_REG_MASK",
    "RC_CONTOUR_TESS_AREA_EDGES",
    "RC_CONTOUR_TESS_WALL_EDGES",
    "ContourSet",
    "boundary_flags",
    "build_contours",
    "build_contours_many",
    "segment_hits_edges",
    "segments_cross",
]
