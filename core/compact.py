"""Compact heightfield: the open (walkable) space above solid spans, with 4-neighbour links.

One compact span per walkable solid span: ``y`` = its floor (the solid span's top), ``h`` = the
clearance up to the next solid span (capped at 255). Direction d: 0 = (x-1), 1 = (y+1),
2 = (x+1), 3 = (y-1), Recast's order with Recast's z as VoxNav's y.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .context import BuildContext
from .errors import VoxNavError
from .heightfield import Heightfield

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
    smin = np.asarray(hf.smin, dtype=np.int64)
    smax = np.asarray(hf.smax, dtype=np.int64)
    area = np.asarray(hf.area, dtype=np.uint8)
    nsolid = smin.shape[0]

    # Solid spans: column and ceiling (next span's bottom in the column, else MAX_HEIGHT).
    solid_col = np.repeat(np.arange(ncols, dtype=np.int64), np.diff(col_start))
    ceiling = np.full(nsolid, MAX_HEIGHT, dtype=np.int64)
    if nsolid > 1:
        same = solid_col[1:] == solid_col[:-1]
        ceiling[:-1][same] = smin[1:][same]

    keep = area != 0
    col = solid_col[keep]
    y = smax[keep]
    h = np.clip(ceiling[keep] - y, 0, 0xFF)
    n = int(col.shape[0])
    cell_start = np.zeros(ncols + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=ncols), out=cell_start[1:])
    span_x = col % width
    span_y = col // width
    if progress is not None:
        progress(0.5, "compact: spans")

    # Connections: test every span of every neighbour column, keep the lowest that passes.
    con = np.full((n, 4), NOT_CONNECTED, dtype=np.uint8)
    neighbor = np.full((n, 4), -1, dtype=np.int32)
    top = y + h
    max_layer = 0
    for d in range(4):
        nx = span_x + DIR_OFFSET_X[d]
        ny = span_y + DIR_OFFSET_Y[d]
        inside = (nx >= 0) & (ny >= 0) & (nx < width) & (ny < height)
        src = np.nonzero(inside)[0]
        ncol = nx[src] + ny[src] * width
        first = cell_start[ncol]
        count = cell_start[ncol + 1] - first
        # One row per (span, candidate neighbour span), candidates bottom-up.
        pair_src = np.repeat(src, count)
        offsets = np.arange(pair_src.shape[0], dtype=np.int64) - np.repeat(
            np.cumsum(count) - count, count
        )
        k = np.repeat(first, count) + offsets
        bot = np.maximum(y[pair_src], y[k])
        tp = np.minimum(top[pair_src], top[k])
        ok = ((tp - bot) >= walkable_height) & (np.abs(y[k] - y[pair_src]) <= walkable_climb)
        too_deep = ok & (offsets > MAX_LAYERS)
        if too_deep.any():
            max_layer = max(max_layer, int(offsets[too_deep].max()))
            ok &= ~too_deep
        hit = np.nonzero(ok)[0]
        # Pairs are grouped by span (ascending) and ordered bottom-up: the first hit per span
        # wins, found where the span changes (no sort needed).
        hit_pairs = pair_src[hit]
        first_hit = np.flatnonzero(np.diff(hit_pairs, prepend=-1))
        hit_src = hit_pairs[first_hit]
        layer = offsets[hit[first_hit]]
        con[hit_src, d] = layer.astype(np.uint8)
        neighbor[hit_src, d] = (k[hit[first_hit]]).astype(np.int32)
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
        area=area[keep].copy(),
        span_x=span_x.astype(np.int32),
        span_y=span_y.astype(np.int32),
    )


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
    index = np.where(has, start[:-1], 0)
    return (
        index.astype(np.uint32).reshape(height, width),
        count.astype(np.uint8).reshape(height, width),
    )
