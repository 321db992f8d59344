"""The seed articles' voxel path finding: BFS and A* through the dense voxel grid, with climbing.

A voxel is **stayable** (an agent one voxel in size can be there) when it is free and

- the voxel below it is solid (standing on a floor), or
- a voxel beside it (x +- 1 or y +- 1, same z) is solid (climbing a wall), or
- a voxel beside-and-below it (x +- 1 or y +- 1, z - 1) is solid (climbing down over an edge).

Moves go between 6-neighbour voxels (x, y, z +- 1) that are both stayable, each costing one
step; a path is a shortest sequence of such moves. With ``clearance`` > 1 a stayable voxel
also needs that many free voxels from itself upwards (a taller agent). The grid is padded by
one voxel of free space on every side, so an agent can stand on top of the highest span and
walk around the scene's outer walls; nothing outside that is reachable.

`walk_path` is the walking-only mode: the same search over the compact heightfield's spans,
moving only along its links (which already obey the bake's climb and clearance limits).

Searches expand a whole frontier at a time with array operations (no Python queue): BFS one
distance layer per round; A* one f-value bucket per round, using the Manhattan distance, which
never overestimates a 6-neighbour step count and changes by 1 per step, so every move keeps f
or raises it by 2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compact import CompactHeightfield
from ..errors import VoxNavError
from ..heightfield import VoxelGrid
from ..limits import whole_indices

#: Path statuses.
FOUND = "found"
UNREACHABLE = "unreachable"
NO_START = "no start"
NO_GOAL = "no goal"

#: Moves in order: -x, +x, -y, +y, -z, +z (a parent code indexes this table).
_MOVES = np.array(
    [[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]], dtype=np.int64
)


@dataclass
class VoxelPath:
    """One path. ``voxels`` int64 (k, 3) (ix, iy, iz) grid cells from start to goal, ``points``
    float64 (k, 3) their centres in Z-up world units [Units: wu]; empty unless status is
    `FOUND`. ``steps`` = k - 1 moves; ``expanded``: voxels or spans the search visited."""

    status: str
    voxels: np.ndarray
    points: np.ndarray
    expanded: int

    @property
    def found(self) -> bool:
        return self.status == FOUND

    @property
    def steps(self) -> int:
        return max(int(self.voxels.shape[0]) - 1, -1) if self.found else -1


def _unpack(grid: VoxelGrid) -> np.ndarray:
    """bool (height, width, depth) occupancy from the packed words."""
    as_bytes = np.ascontiguousarray(grid.bits).view(np.uint8)
    bits = np.unpackbits(as_bytes, axis=2, bitorder="little")
    return bits[:, :, : grid.depth].astype(bool)


#: Voxels of the padded grid a `VoxelNavigator` takes (about 1 GiB while it is built, 8 bytes
#: a voxel; a search adds 1 byte a voxel, an A* search 10: 2.3 GiB at the limit). [Units:
#: voxels]
MAX_NAVIGATOR_VOXELS = 1 << 27


def check_grid_size(width: int, height: int, depth: int, clearance: int = 1) -> None:
    """Refuse (`VoxNavError`) a grid of ``width`` x ``height`` x ``depth`` voxels whose
    padded form a `VoxelNavigator` with ``clearance`` would exceed `MAX_NAVIGATOR_VOXELS`:
    callers check it before they build the grid itself (its dense bits, an obstacle's voxels)."""
    padded = (height + 4) * (width + 4) * (depth + 2 + min(clearance, depth + 1))
    if padded > MAX_NAVIGATOR_VOXELS:
        # Before anything is allocated: one walkable triangle 1,500 m above a level made
        # 1.4e9 voxels, about 10 GiB of these arrays (a MemoryError).
        raise VoxNavError(
            f"the voxel grid is {width} x {height} x {depth} voxels ({padded:,} padded), more "
            f"than voxel path finding handles ({MAX_NAVIGATOR_VOXELS:,}, about 8 bytes each): "
            "bake with a larger cell size or cell height, or bounds around the part to search"
        )


class VoxelNavigator:
    """Stayable voxels of one `VoxelGrid`, computed once; answers path queries on them.

    Memory: 3 bytes per voxel of the padded grid ((height + 4) x (width + 4) x (depth + 2 +
    clearance)), plus 1 more per voxel during a BFS search and 10 more during an A* search
    (parents, costs, closed flags and the bucket's stamps).
    """

    def __init__(self, grid: VoxelGrid, clearance: int = 1):
        """grid: the solid voxels; clearance: free voxels an agent needs upwards, counting its
        own [Units: voxels] [Limit: >= 1]. Points more than min(clearance, depth + 1) voxels
        above the grid's top are outside (a taller agent needs no more headroom there: the
        space above the grid is free)."""
        try:  # a bool is no count (True was taken as 1)
            whole = int(clearance) == clearance and clearance >= 1
            whole = whole and not isinstance(clearance, bool | np.bool_)
        except (TypeError, ValueError, OverflowError):
            whole = False
        if not whole:
            raise VoxNavError(f"clearance must be a whole number of voxels >= 1, got {clearance!r}")
        self.grid = grid
        self.clearance = int(clearance)
        h, w, d = int(grid.height), int(grid.width), int(grid.depth)
        # Headroom past the grid's top is free: clearances above d + 1 test the same voxels
        # (and must not size the arrays).
        headroom = min(self.clearance, d + 1)
        check_grid_size(w, h, d, self.clearance)
        occ = _unpack(grid)
        # Padded solid grid, indexed [y, x, z]: a ring of free voxels the agent may use
        # around X/Y and a ring it may not (so no move leaves the array), a never-stayable
        # layer below z = 0, and headroom on top.
        solid = np.zeros((h + 4, w + 4, d + 2 + headroom), dtype=bool)
        solid[2:-2, 2:-2, 1 : d + 1] = occ
        free = ~solid
        support = np.zeros_like(solid)
        support[:, :, 1:] = solid[:, :, :-1]  # floor below
        beside = np.zeros_like(solid)
        beside[1:, :, :] |= solid[:-1, :, :]
        beside[:-1, :, :] |= solid[1:, :, :]
        beside[:, 1:, :] |= solid[:, :-1, :]
        beside[:, :-1, :] |= solid[:, 1:, :]
        support |= beside  # climbing a wall
        support[:, :, 1:] |= beside[:, :, :-1]  # climbing down over an edge
        room = free.copy()
        for up in range(1, headroom):
            room[:, :, :-up] &= free[:, :, up:]
            room[:, :, -up:] = False
        stayable = room & support
        stayable[0, :, :] = stayable[-1, :, :] = False
        stayable[:, 0, :] = stayable[:, -1, :] = False
        stayable[:, :, 0] = stayable[:, :, -1] = False
        self.shape = stayable.shape
        self.stayable = stayable.ravel()
        _, pw, pd = self.shape
        self._offsets = _MOVES[:, 1] * pw * pd + _MOVES[:, 0] * pd + _MOVES[:, 2]

    # -- coordinates ----------------------------------------------------------------------

    def _flat(self, cells: np.ndarray) -> np.ndarray:
        _, pw, pd = self.shape
        return ((cells[:, 1] + 2) * pw + (cells[:, 0] + 2)) * pd + (cells[:, 2] + 1)

    def _cells(self, flat: np.ndarray) -> np.ndarray:
        _, pw, pd = self.shape
        yz, z = np.divmod(flat, pd)
        y, x = np.divmod(yz, pw)
        return np.stack([x - 2, y - 2, z - 1], axis=1)

    def cell_of(self, point) -> np.ndarray | None:
        """The voxel (ix, iy, iz) a Z-up world point falls in, or None outside the padded grid
        or for a non-finite point."""
        g = self.grid
        try:
            p = np.asarray(point, dtype=np.float64)
        except (TypeError, ValueError):
            p = np.zeros(0)
        if p.shape != (3,):
            raise VoxNavError(f"a point is three numbers (x, y, z), got {point!r}")
        if not np.isfinite(p).all():
            return None
        size = np.array([g.cs, g.cs, g.ch], dtype=np.float64)
        cell = np.floor((p - np.asarray(g.bmin, dtype=np.float64)) / size).astype(np.int64)
        ph, pw, pd = self.shape
        if not (-2 <= cell[0] < pw - 2 and -2 <= cell[1] < ph - 2 and -1 <= cell[2] < pd - 1):
            return None
        return cell

    def centres(self, cells: np.ndarray) -> np.ndarray:
        """float64 (k, 3) Z-up world centres of voxels (ix, iy, iz). [Units: wu]"""
        g = self.grid
        size = np.array([g.cs, g.cs, g.ch], dtype=np.float64)
        return np.asarray(g.bmin, dtype=np.float64) + (cells + 0.5) * size

    def is_stayable(self, cells) -> np.ndarray:
        """bool (k,) for voxels int (k, 3); voxels outside the padded grid are not."""
        c = whole_indices(cells, "cells", "voxel indices")
        if c.shape == (3,) or c.size == 0:
            c = c.reshape(-1, 3)
        if c.ndim != 2 or c.shape[1] != 3:  # a reshape made a (2, 6) array 4 scrambled cells
            raise VoxNavError(f"cells must be (ix, iy, iz) each, an (k, 3) array; got {c.shape}")
        c = c.astype(np.int64)
        ph, pw, pd = self.shape
        inside = ((c[:, 0] >= -2) & (c[:, 0] < pw - 2) & (c[:, 1] >= -2) & (c[:, 1] < ph - 2)) & (
            (c[:, 2] >= -1) & (c[:, 2] < pd - 1)
        )
        out = np.zeros(c.shape[0], dtype=bool)
        out[inside] = self.stayable[self._flat(c[inside])]
        return out

    def _settle(self, cell: np.ndarray | None) -> int:
        """The flat index of the stayable voxel of ``cell``'s column nearest to it (itself if
        stayable; on a tie the lower one: an agent placed in the air drops to the ground, one
        placed exactly on a floor, which can round into the floor's top voxel, stands on it),
        or -1 when the column has none."""
        if cell is None:
            return -1
        _, pw, pd = self.shape
        here = int(self._flat(cell[None])[0])
        column_base = here - int(cell[2] + 1)
        hits = np.nonzero(self.stayable[column_base : column_base + pd])[0]
        if not hits.shape[0]:
            return -1
        # argmin takes the first of equal distances, i.e. the lower voxel.
        return column_base + int(hits[np.argmin(np.abs(hits - (here - column_base)))])

    # -- searches ---------------------------------------------------------------------------

    def find_path(self, start, goal, method: str = "bfs") -> VoxelPath:
        """The shortest voxel path between two Z-up world points.

        Each point is placed on the stayable voxel of its column nearest to it. method: "bfs"
        (breadth-first, one distance layer per round) or "astar" (A* with the Manhattan
        distance, one f-value bucket per round); both give a shortest path.
        """
        if method not in ("bfs", "astar"):  # before the ends: an end off the grid hid it
            raise VoxNavError(f"method must be 'bfs' or 'astar', got {method!r}")
        s = self._settle(self.cell_of(start))
        t = self._settle(self.cell_of(goal))
        if s < 0:
            return self._result(NO_START, None, 0)
        if t < 0:
            return self._result(NO_GOAL, None, 0)
        if method == "bfs":
            parent, expanded = self._bfs(s, t)
        else:
            parent, expanded = self._astar(s, t)
        if parent[t] < 0 and s != t:
            return self._result(UNREACHABLE, None, expanded)
        return self._result(FOUND, self._trace(parent, s, t), expanded)

    def _result(self, status: str, flat: np.ndarray | None, expanded: int) -> VoxelPath:
        if flat is None:
            empty = np.zeros((0, 3), dtype=np.int64)
            return VoxelPath(status, empty, empty.astype(np.float64), expanded)
        cells = self._cells(flat)
        return VoxelPath(status, cells, self.centres(cells), expanded)

    def _trace(self, parent: np.ndarray, s: int, t: int) -> np.ndarray:
        # One step per path voxel: a path, not the search, so its length bounds this loop.
        out = [t]
        v = t
        while v != s:
            v = v - int(self._offsets[parent[v]])
            out.append(v)
        return np.array(out[::-1], dtype=np.int64)

    def _expand(self, frontier: np.ndarray, parent: np.ndarray):
        """Unvisited stayable neighbours of a frontier: (targets, move codes), each target
        once. ``parent`` int8 (voxels,) -1 = unvisited is updated for the targets."""
        nb = (frontier[:, None] + self._offsets[None, :]).ravel()
        code = np.tile(np.arange(6, dtype=np.int8), frontier.shape[0])
        ok = self.stayable[nb] & (parent[nb] < 0)
        nb, code = nb[ok], code[ok]
        parent[nb] = code
        # Several frontier voxels may reach one target; exactly one entry wrote its code.
        once = parent[nb] == code
        return nb[once], code[once]

    def _bfs(self, s: int, t: int) -> tuple[np.ndarray, int]:
        parent = np.full(self.stayable.shape[0], -1, dtype=np.int8)
        parent[s] = 6  # the start: any non-negative code marks it visited
        frontier = np.array([s], dtype=np.int64)
        expanded = 1
        while frontier.shape[0] and parent[t] < 0:
            frontier, _ = self._expand(frontier, parent)
            expanded += int(frontier.shape[0])
        return parent, expanded

    def _astar(self, s: int, t: int) -> tuple[np.ndarray, int]:
        n = self.stayable.shape[0]
        goal = self._cells(np.array([t]))[0]

        def h(flat):
            c = self._cells(flat)
            return np.abs(c - goal).sum(axis=1)

        parent = np.full(n, -1, dtype=np.int8)
        g = np.full(n, np.iinfo(np.int32).max, dtype=np.int32)
        closed = np.zeros(n, dtype=bool)
        stamp = np.full(n, -1, dtype=np.int32)  # a bucket's position: below n < 2**31
        g[s] = 0
        parent[s] = 6
        f = int(h(np.array([s]))[0])
        current = np.array([s], dtype=np.int64)
        later: list[np.ndarray] = []
        expanded = 0
        while True:
            while current.shape[0]:
                # Each voxel once, open, and still of this bucket's f (not a stale entry).
                order = np.arange(current.shape[0], dtype=np.int32)
                stamp[current] = order
                current = current[stamp[current] == order]
                current = current[~closed[current]]
                current = current[g[current] + h(current) == f]
                if not current.shape[0]:
                    break
                closed[current] = True
                expanded += int(current.shape[0])
                if closed[t]:
                    return parent, expanded
                nb = (current[:, None] + self._offsets[None, :]).ravel()
                code = np.tile(np.arange(6, dtype=np.int8), current.shape[0])
                g_new = np.repeat(g[current] + 1, 6)
                ok = self.stayable[nb] & ~closed[nb] & (g_new < g[nb])
                nb, code, g_new = nb[ok], code[ok], g_new[ok]
                f_new = g_new + h(nb)
                # f stays (same bucket) or rises by 2 (next bucket); writing the rising ones
                # first lets a same-bucket (shorter) arrival at one voxel win.
                up = f_new > f
                g[nb[up]] = g_new[up]
                parent[nb[up]] = code[up]
                g[nb[~up]] = g_new[~up]
                parent[nb[~up]] = code[~up]
                later.append(nb[up])
                current = nb[~up]
            if not later:
                return parent, expanded
            f += 2
            current = np.concatenate(later)
            later = []


def walk_path(chf: CompactHeightfield, start, goal, walkable_only: bool = True) -> VoxelPath:
    """The walking-only mode: a shortest path over the compact heightfield's span links.

    Moves go between spans linked in `CompactHeightfield.neighbor` (4 directions), which the
    bake made only where the floors differ by at most the agent's climb and the gap above both
    is at least its height. start/goal: Z-up world points, each placed on the span of its
    column whose floor is nearest below the point (else the nearest at all). ``voxels`` of the
    result are (ix, iy, floor height in cells) per span; ``points`` the centres of the span
    floors. walkable_only: use only spans with a non-null area (after erosion).
    """
    n = chf.span_count
    usable = chf.area != 0 if walkable_only else np.ones(n, dtype=bool)
    s = _span_at(chf, start, usable)
    t = _span_at(chf, goal, usable)
    empty = np.zeros((0, 3), dtype=np.int64)
    if s < 0:
        return VoxelPath(NO_START, empty, empty.astype(np.float64), 0)
    if t < 0:
        return VoxelPath(NO_GOAL, empty, empty.astype(np.float64), 0)
    nbr = np.where(chf.neighbor >= 0, chf.neighbor, n).astype(np.int64)
    ok_target = np.append(usable, False)
    parent = np.full(n + 1, -1, dtype=np.int64)
    parent[n] = n  # the sentinel counts as visited
    parent[s] = s
    frontier = np.array([s], dtype=np.int64)
    expanded = 1
    while frontier.shape[0] and parent[t] < 0:
        nb = nbr[frontier].ravel()
        src = np.repeat(frontier, 4)
        ok = ok_target[nb] & (parent[nb] < 0)
        nb, src = nb[ok], src[ok]
        parent[nb] = src
        frontier = nb[parent[nb] == src]
        expanded += int(frontier.shape[0])
    if parent[t] < 0:
        return VoxelPath(UNREACHABLE, empty, empty.astype(np.float64), expanded)
    spans = [t]
    while spans[-1] != s:  # one step per path span
        spans.append(int(parent[spans[-1]]))
    idx = np.array(spans[::-1], dtype=np.int64)
    cells = np.stack([chf.span_x[idx], chf.span_y[idx], chf.y[idx]], axis=1).astype(np.int64)
    size = np.array([chf.cs, chf.cs, chf.ch], dtype=np.float64)
    points = np.asarray(chf.bmin, dtype=np.float64) + cells * size
    points[:, :2] += 0.5 * size[:2]
    return VoxelPath(FOUND, cells, points, expanded)


def _span_at(chf: CompactHeightfield, point, usable: np.ndarray) -> int:
    try:
        p = np.asarray(point, dtype=np.float64).reshape(3)
    except (TypeError, ValueError):
        raise VoxNavError(f"a path end point is three numbers (x, y, z), got {point!r}") from None
    if not np.isfinite(p).all():
        return -1
    rel = (p - np.asarray(chf.bmin, dtype=np.float64)) / np.array([chf.cs, chf.cs, chf.ch])
    ix, iy = int(np.floor(rel[0])), int(np.floor(rel[1]))
    if not (0 <= ix < chf.width and 0 <= iy < chf.height):
        return -1
    col = iy * chf.width + ix
    lo, hi = int(chf.cell_start[col]), int(chf.cell_start[col + 1])
    spans = np.arange(lo, hi)[usable[lo:hi]]
    if not spans.shape[0]:
        return -1
    floors = chf.y[spans].astype(np.float64)
    below = floors <= rel[2] + 1e-9
    if below.any():
        return int(spans[below][np.argmax(floors[below])])
    return int(spans[np.argmin(np.abs(floors - rel[2]))])


__all__ = [
    "FOUND",
    "NO_GOAL",
    "NO_START",
    "UNREACHABLE",
    "VoxelNavigator",
    "VoxelPath",
    "walk_path",
]
