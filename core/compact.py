"""Compact heightfield: the open (walkable) space above solid spans, with 4-neighbour links.

One compact span per walkable solid span: ``y`` = its floor (the solid span's top), ``h`` = the
clearance up to the next solid span (capped at 255). Direction d: 0 = (x-1), 1 = (y+1),
2 = (x+1), 3 = (y-1), Recast's order with Recast's z as VoxNav's y.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: ``con`` value of a direction with no walkable connection. [Recast: RC_NOT_CONNECTED]
NOT_CONNECTED = 63
#: Region id flag of the border regions of a tile. [Recast: RC_BORDER_REG]
BORDER_REG = 0x8000
#: Neighbour offsets per direction, (dx, dy).
DIR_OFFSET_X = np.array([-1, 0, 1, 0], dtype=np.int64)
DIR_OFFSET_Y = np.array([0, 1, 0, -1], dtype=np.int64)


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
    #: uint16 (n,) distance to the nearest border, or None before the distance field. [Units: cells*2]
    dist: np.ndarray | None = None
    #: uint16 (n,) region id (0 = none; BORDER_REG flag), or None before partitioning.
    reg: np.ndarray | None = None
    max_distance: int = 0
    max_regions: int = 0

    @property
    def span_count(self) -> int:
        return int(self.y.shape[0])
