"""Compact heightfield: the open (walkable) space above solid spans, with 4-neighbour links.

One compact span per walkable solid span: ``y`` = its floor (the solid span's top), ``h`` = the
clearance up to the next solid span (capped at 255). Direction d: 0 = (x-1), 1 = (y+1),
2 = (x+1), 3 = (y-1), Recast's order with Recast's z as VoxNav's y.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from . import threads
from .arrays import select
from .context import BuildContext
from .errors import VoxNavError
from .heightfield import Heightfield

#: Solid spans up to which `build_compact_heightfield` selects the walkable ones by index
#: (faster than a mask where the mask changes from span to span; above, the index array's
#: fresh memory costs more).
TAKE_WALKABLE_MAX_SPANS = 1 << 21
#: ``con`` value of a direction with no walkable connection. [Recast: RC_NOT_CONNECTED]
NOT_CONNECTED = 63
#: Region id flag of the border regions of a tile. [Recast: RC_BORDER_REG]
BORDER_REG = 0x8000
#: Neighbour offsets per direction, (dx, dy).
DIR_OFFSET_X = np.array([-1, 0, 1, 0], dtype=np.int64)
DIR_OFFSET_Y = np.array([0, 1, 0, -1], dtype=np.int64)


def any_of_4(mask: np.ndarray) -> np.ndarray:
    """bool (k,): any of the 4 directions of a bool (k, 4) mask. Reads each row as one uint32:
    a reduction over a short last axis is several times slower."""
    return np.ascontiguousarray(mask).view(np.uint32)[:, 0] != 0


def per_direction(op, table: np.ndarray, values: np.ndarray, dtype=bool) -> np.ndarray:
    """``op(table[:, d], values)`` for every direction d of an (n, 4) table, as an (n, 4)
    array: one ufunc pass per direction over n items. (Broadcasting ``values[:, None]``
    against the table makes NumPy loop four items at a time: 4-6x slower.)"""
    out = np.empty(table.shape, dtype=dtype)
    for d in range(table.shape[1]):
        op(table[:, d], values, out=out[:, d])
    return out


def rows_of(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``table[index]`` for a C-contiguous (n, k) table and integer indices: each row read as
    one k-item record by a 1-D take, 3-4x faster than NumPy's row indexing (which copies the
    row item by item)."""
    record = np.dtype((np.void, table.shape[1] * table.itemsize))
    rows = np.ascontiguousarray(table).view(record).reshape(-1)
    return rows.take(index).view(table.dtype).reshape(-1, table.shape[1])


def bits_of_4(mask: np.ndarray) -> np.ndarray:
    """uint8 (k,): bit d set when direction d of a bool (k, 4) mask is. Reads each row as one
    little-endian uint32 (byte d is 0 or 1) and shifts the bytes' low bits together: an
    order of magnitude faster than packbits along a short last axis."""
    row = np.ascontiguousarray(mask).view("<u4")[:, 0]
    bits = row >> 7
    bits |= row
    bits |= row >> 14
    bits |= row >> 21
    bits &= 0xF
    return bits.astype(np.uint8)


def all_of_4(mask: np.ndarray) -> np.ndarray:
    """bool (k,): all 4 directions of a bool (k, 4) mask (see `any_of_4`)."""
    return np.ascontiguousarray(mask).view(np.uint32)[:, 0] == 0x01010101


@dataclass
class CompactHeightfield:
    """Open spans in CSR layout (spans of column c: cell_start[c]:cell_start[c+1], bottom-up)."""

    width: int
    height: int
    #: [Units: cells]
    border_size: int
    #: [Units: ch]
    walkable_height: int
    #: [Units: ch]
    walkable_climb: int
    #: float32 (3,) Z-up; bmax[2] is raised by walkable_height * ch as Recast does. [Units: wu]
    bmin: np.ndarray
    bmax: np.ndarray
    cs: np.float32
    ch: np.float32
    #: int64 (width*height+1,)
    cell_start: np.ndarray
    #: uint16 (n,) floor height. [Units: ch]
    y: np.ndarray
    #: uint8 (n,) clearance. [Units: ch] [Limit: <= 255]
    h: np.ndarray
    #: uint8 (n, 4) layer index of the connected span within the neighbour column, 63 = none.
    con: np.ndarray
    #: int32 (n, 4) absolute index of the connected span, -1 = none.
    neighbor: np.ndarray
    #: uint8 (n,) area id (0 = null, 63 = walkable).
    area: np.ndarray
    #: int32 (n,) ix and iy of every span.
    span_x: np.ndarray
    span_y: np.ndarray
    #: uint16 (n,) distance to the nearest border, None before the distance field.
    #: [Units: half cells, chamfer 2/3]
    dist: np.ndarray | None = None
    #: uint16 (n,) region id (0 = none; BORDER_REG flag), or None before partitioning.
    reg: np.ndarray | None = None
    max_distance: int = 0
    max_regions: int = 0

    @property
    def span_count(self) -> int:
        return int(self.y.shape[0])


#: Spans linked per chunk in `build_compact_heightfield` (temporaries of about 40 bytes per
#: span and direction: arrays of at most 2 MiB, which the allocator reuses and the cache
#: holds; 4x4 tiling, same process: 2**18 106 ms, 2**16 94 ms, 2**16 on two threads 75 ms).
LINK_CHUNK_SPANS = 1 << 16
#: Threads linking chunks at once.
LINK_WORKERS = min(2, os.cpu_count() or 1)
#: Highest layer index a connection can store (63 means "not connected"). [Recast: MAX_LAYERS]
MAX_LAYERS = NOT_CONNECTED - 1
#: Ceiling of the topmost span of a column. [Recast: MAX_HEIGHT in rcBuildCompactHeightfield]
MAX_HEIGHT = 0xFFFF


def _check_heightfield(hf: Heightfield) -> None:
    ncols = int(hf.width) * int(hf.height)
    if np.shape(hf.col_start) != (ncols + 1,):
        raise VoxNavError(
            f"heightfield col_start has shape {np.shape(hf.col_start)}, expected ({ncols + 1},) "
            f"for a {hf.width} x {hf.height} grid"
        )
    n = int(hf.col_start[-1])
    for name in ("smin", "smax", "area"):
        if np.shape(getattr(hf, name)) != (n,):
            raise VoxNavError(
                f"heightfield {name} has shape {np.shape(getattr(hf, name))}, expected ({n},) "
                "(one value per span, col_start[-1] spans)"
            )


def build_compact_heightfield(
    hf: Heightfield,
    walkable_height: int,
    walkable_climb: int,
    *,
    progress=None,
    ctx: BuildContext | None = None,
) -> CompactHeightfield:
    """The open space above every walkable solid span, linked to its 4 neighbours.

    [Recast: rcBuildCompactHeightfield]

    Rule: every solid span with a non-null area gives one compact span, in column order then
    bottom-up: ``y`` = the solid span's top (``smax``), ``h`` = ``min(next.smin - smax, 255)``,
    where the topmost span of a column has the ceiling 0xFFFF (so ``h`` = 255). Direction ``d``
    of span ``s`` connects to the lowest span ``k`` of the neighbour column with
    ``min(s.y + s.h, k.y + k.h) - max(s.y, k.y) >= walkable_height`` and
    ``|k.y - s.y| <= walkable_climb``. A qualifying span whose layer index within its column
    exceeds 62 cannot be stored: it is skipped and a warning given (``ctx``), as Recast does
    ("too many layers"). ``bmax[2]`` is raised by ``walkable_height * ch``.

    Parameters:
        hf: the filtered solid heightfield (not modified).
        walkable_height: minimum floor-to-ceiling clearance. [Units: ch] [Limit: >= 3]
        walkable_climb: maximum ledge height that is still traversable. [Units: ch]
            [Limit: >= 0]
        progress: optional callable ``progress(fraction: float, message: str)``.

    Returns:
        CompactHeightfield with ``cell_start`` (w*h+1,) int64, ``y`` uint16, ``h`` uint8,
        ``con`` (n, 4) uint8, ``neighbor`` (n, 4) int32, ``area`` uint8, ``span_x``/``span_y``
        int32; ``dist``/``reg`` unset.
    """
    _check_heightfield(hf)
    walkable_height = int(walkable_height)
    walkable_climb = int(walkable_climb)
    if walkable_height < 0 or walkable_climb < 0:
        raise VoxNavError(
            f"walkable_height ({walkable_height}) and walkable_climb ({walkable_climb}) must be "
            ">= 0 voxels; check agent_height and agent_max_climb"
        )
    width, height = int(hf.width), int(hf.height)
    ncols = width * height
    col_start = np.asarray(hf.col_start, dtype=np.int64)
    # int32 (heights are below 2**14, columns below 2**31): half the traffic of int64.
    smin = np.asarray(hf.smin).astype(np.int32)
    smax = np.asarray(hf.smax).astype(np.int32)
    area = np.asarray(hf.area, dtype=np.uint8)
    nsolid = smin.shape[0]
    index = np.int32 if ncols < 2**31 else np.int64

    # Solid spans: column and ceiling (next span's bottom in the column, else MAX_HEIGHT: the
    # last span of each column).
    counts = np.diff(col_start)
    ceiling = np.empty(nsolid, dtype=np.int32)
    ceiling[:-1] = smin[1:]
    ceiling[col_start[1:][counts > 0] - 1] = MAX_HEIGHT

    # The walkable spans. Up to `TAKE_WALKABLE_MAX_SPANS` solid spans by flatnonzero and
    # takes: four boolean selections of every solid span, the filters' nulls scattered among
    # them, cost several times as much (nav_test's stage 3.7 -> 2.7 ms, the 4x4's 30 -> 24).
    # Above, by the mask: its index array (8 bytes a kept span against the mask's 1 a solid
    # span) is fresh memory there, which costs more than the branches (the 10x10's stage
    # 164-232 -> 280-364 ms).
    if nsolid <= TAKE_WALKABLE_MAX_SPANS:
        kept = np.flatnonzero(area)

        def walkable(values: np.ndarray) -> np.ndarray:
            return values.take(kept)
    else:
        mask = area != 0

        def walkable(values: np.ndarray) -> np.ndarray:
            return values[mask]

    col = walkable(np.repeat(np.arange(ncols, dtype=index), counts))
    y = walkable(smax)
    h = np.clip(walkable(ceiling) - y, 0, 0xFF)
    walkable_area = walkable(area)
    del walkable
    n = int(col.shape[0])
    # Spans per column counted in place (a bincount would be a second array of ncols: on
    # large grids first touching fresh memory costs more than the counting).
    cell_start = np.zeros(ncols + 1, dtype=np.int64)
    np.add.at(cell_start[1:], col, 1)
    np.cumsum(cell_start, out=cell_start)
    span_x = col % width
    span_y = col // width
    if progress is not None:
        progress(0.5, "compact: spans")

    # Connections, in rounds over the layers of the neighbour columns: round j tests layer j
    # of the neighbour column for every (span, direction) still unresolved whose neighbour
    # column has more than j spans. Round 0 covers every pair at once; most columns hold one
    # span, so later rounds are short. No temporaries per direction or per candidate pair.
    # Every entry is written by `_link_rounds` (its layer 0 writes whole chunks).
    con = np.empty((n, 4), dtype=np.uint8)
    neighbor = np.empty((n, 4), dtype=np.int32)
    max_layer = _link_rounds(
        span_x, span_y, y, y + h, cell_start, width, height, walkable_height, walkable_climb,
        con.reshape(-1), neighbor.reshape(-1),
    )  # fmt: skip
    if max_layer > MAX_LAYERS:
        message = (
            f"compact heightfield: too many layers {max_layer} (max: {MAX_LAYERS}); spans above "
            f"layer {MAX_LAYERS} of a column get no connections to their neighbours"
        )
        if ctx is not None:
            ctx.warn(message)

    bmin = np.asarray(hf.bmin, dtype=np.float32).copy()
    bmax = np.asarray(hf.bmax, dtype=np.float32).copy()
    ch = np.float32(hf.ch)
    bmax[2] = np.float32(bmax[2] + np.float32(walkable_height) * ch)
    if progress is not None:
        progress(1.0, "compact: connections")
    return CompactHeightfield(
        width=width,
        height=height,
        border_size=0,
        walkable_height=walkable_height,
        walkable_climb=walkable_climb,
        bmin=bmin,
        bmax=bmax,
        cs=np.float32(hf.cs),
        ch=ch,
        cell_start=cell_start,
        y=y.astype(np.uint16),
        h=h.astype(np.uint8),
        con=con,
        neighbor=neighbor,
        area=walkable_area,
        span_x=span_x.astype(np.int32),
        span_y=span_y.astype(np.int32),
    )


def _link_rounds(
    span_x,
    span_y,
    floor,
    top,
    cell_start,
    width,
    height,
    walkable_height,
    walkable_climb,
    con_flat,
    neighbor_flat,
) -> int:
    """Fill ``con_flat`` / ``neighbor_flat`` (views of the (n, 4) arrays; every entry is
    written, so they may start uninitialised) with the lowest qualifying span of each
    direction's neighbour column, NOT_CONNECTED / -1 where there is none; returns the highest
    layer index of a qualifying span that could not be stored (0 if none). [Recast:
    rcBuildCompactHeightfield]"""
    ncols = width * height
    # Neighbour column per (span, direction), flat index 4 * span + d; outside the grid it is
    # the empty column ``ncols``.
    # int32 where it fits (heights are below 2**14): half the memory traffic of int64.
    index = np.int32 if max(4 * floor.shape[0], ncols + 1) < 2**31 else np.int64
    starts = np.empty(ncols + 2, dtype=index)  # cell_start and a last empty column
    starts[:-1] = cell_start
    starts[-1] = cell_start[-1]
    # int16 when every top fits (span heights are 13-bit, clearances 8-bit): half the bytes
    # the gathers below move.
    small = int(top.max(initial=0)) < 2**15 and int(floor.min(initial=0)) > -(2**15)
    floor = floor.astype(np.int16 if small else np.int32)
    top = top.astype(np.int16 if small else np.int32)
    sx = span_x.astype(index)
    sy = span_y.astype(index)
    offsets = (DIR_OFFSET_X + DIR_OFFSET_Y * width).astype(index)
    # Spans in chunks: each chunk's temporaries (a few MiB) are reused by the allocator
    # instead of fresh pages for every whole-heightfield array (page faults dominate then).
    # Chunks write disjoint rows, and NumPy's gathers run without the GIL, so two threads
    # link two chunks at once.
    n = int(floor.shape[0])

    def link_chunk(lo: int) -> int:
        hi = min(n, lo + LINK_CHUNK_SPANS)
        max_layer = 0
        x, y = sx[lo:hi], sy[lo:hi]
        by_dir = np.empty((hi - lo, 4), dtype=index)
        base = y * width + x
        for d in range(4):
            np.add(base, offsets[d], out=by_dir[:, d])
        by_dir[x == 0, 0] = ncols
        by_dir[y == height - 1, 1] = ncols
        by_dir[x == width - 1, 2] = ncols
        by_dir[y == 0, 3] = ncols
        ncol = by_dir.reshape(-1)
        # Takes: NumPy's indexing by int32 arrays (``index``) is about twice as slow.
        first = starts.take(ncol)
        count = starts.take(ncol + 1) - first
        del ncol, by_dir
        # Layer 0 (every neighbour column's lowest span) over whole (span, direction) arrays,
        # not through a list of pairs: most columns hold one span. An empty column (count 0)
        # reads some other span there, which ``count`` masks out.
        lowest = np.minimum(first, n - 1)
        floor_src = np.repeat(floor[lo:hi], 4)
        floor_cand = floor.take(lowest)
        ok = np.minimum(np.repeat(top[lo:hi], 4), top.take(lowest))
        ok -= np.maximum(floor_src, floor_cand)
        ok = ok >= walkable_height
        ok &= np.abs(floor_cand - floor_src) <= walkable_climb
        ok &= count > 0
        del floor_src, floor_cand
        # Written whole by arithmetic, not by masked copies (3x slower where the mask changes
        # from entry to entry): NOT_CONNECTED / -1 where not ok, 0 / lowest where ok.
        con_chunk = con_flat[4 * lo : 4 * hi]
        np.logical_not(ok, out=con_chunk, casting="unsafe")
        con_chunk *= NOT_CONNECTED
        lowest += 1
        np.multiply(lowest, ok, out=neighbor_flat[4 * lo : 4 * hi], casting="unsafe")
        neighbor_flat[4 * lo : 4 * hi] -= 1
        del lowest
        pair = np.flatnonzero(~ok & (count > 1))  # the pairs that look further up
        first, count = first[pair], count[pair]
        pair += 4 * lo  # flat index 4 * span + direction
        layer = 1
        while pair.shape[0]:
            src = pair >> 2
            cand = first + layer
            floor_src, floor_cand = floor[src], floor[cand]
            ok = np.minimum(top[src], top[cand]) - np.maximum(floor_src, floor_cand)
            ok = ok >= walkable_height
            ok &= np.abs(floor_cand - floor_src) <= walkable_climb
            if layer > MAX_LAYERS:
                # Recast skips such a span and keeps looking (only higher layers follow).
                if ok.any():
                    max_layer = max(max_layer, layer)
                done = np.zeros_like(ok)
            else:
                hit = pair[ok]
                con_flat[hit] = layer
                neighbor_flat[hit] = cand[ok]
                done = ok
            layer += 1
            keep = ~done & (count > layer)
            pair, first, count = pair[keep], first[keep], count[keep]
        return max_layer

    chunks = range(0, n, LINK_CHUNK_SPANS)
    return max(threads.map_pieces(link_chunk, chunks, LINK_WORKERS), default=0)


def recast_cells(chf: CompactHeightfield, hf: Heightfield | None = None):
    """Recast's ``rcCompactCell`` view of ``chf``: (index uint32 (H, W), count uint8 (H, W)).

    Recast leaves ``index = 0`` for a column with no solid span at all and sets it to the running
    span count for a column whose solid spans are all unwalkable. Pass the solid heightfield
    ``hf`` the compact one was built from to reproduce that exactly; without it every empty
    column gets index 0.
    """
    width, height = int(chf.width), int(chf.height)
    start = np.asarray(chf.cell_start, dtype=np.int64)
    count = np.diff(start)
    has = count > 0
    if hf is not None:
        has = has | (np.diff(np.asarray(hf.col_start, dtype=np.int64)) > 0)
    index = select(has, start[:-1], 0)
    return (
        index.astype(np.uint32).reshape(height, width),
        count.astype(np.uint8).reshape(height, width),
    )
