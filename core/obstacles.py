"""Temporary obstacles (DetourTileCache's): shapes, an index of them, dirty tiles, voxel blocking.

Three shapes, all vertical prisms in the Z-up world [Units: wu]:

- **cylinder**: bottom centre (x, y, z), radius, height (DetourTileCache's ``addObstacle``);
- **box**: axis-aligned, min and max corners (``addBoxObstacle(bmin, bmax)``);
- **oriented box**: centre, half extents (hx, hy, hz) and a yaw about Z in radians
  (``addBoxObstacle(center, halfExtents, yRadians)``).

An obstacle paints its area id (default 0, null: blocked) onto the walkable spans inside it,
after erosion and the bake's own area volumes, exactly as an `AreaVolume` of the same shape
does (the cylinder and box use Recast's ``rcMarkCylinderArea`` / ``rcMarkBoxArea``, the oriented
box ``rcMarkConvexPolyArea`` over its four corners). `ObstacleSet` keeps obstacles by integer id
in the seed's quadtree (`core.quadtree`) on their X/Y bounds, so "which obstacles touch this
tile" is a range query, and remembers the bounds every change touched until `take_changes`.

The seed's RTS case: `block_voxels` sets the voxels an obstacle occupies in a dense
`VoxelGrid`, so the voxel path finding (`core.nav.voxel_path`) goes around placed buildings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from . import limits
from .errors import VoxNavError
from .heightfield import WORD_BITS, VoxelGrid
from .pipeline import AreaVolume
from .quadtree import QuadTree

CYLINDER = "cylinder"
BOX = "box"
ORIENTED_BOX = "oriented_box"
KINDS = (CYLINDER, BOX, ORIENTED_BOX)


def _vec3(value, name: str) -> tuple[float, float, float]:
    try:
        v = np.asarray(value, dtype=np.float64).reshape(3)
    except (TypeError, ValueError):
        raise VoxNavError(f"{name} must be three numbers (x, y, z), got {value!r}") from None
    limits.check_shape_values(v, name)
    return (float(v[0]), float(v[1]), float(v[2]))


@dataclass(frozen=True)
class Obstacle:
    """One obstacle shape (see the module docstring). Build it with `cylinder`, `box` or
    `oriented_box`, which check it.

    ``position``: cylinder bottom centre, box min corner, oriented box centre [Units: wu];
    ``size``: cylinder (radius, radius, height), box (max corner - min corner), oriented box
    half extents [Units: wu] [Limit: > 0 each]; ``yaw`` radians about Z (oriented box only);
    ``area`` the area id painted [Limit: 0..63] (0 blocks).
    """

    kind: str
    position: tuple[float, float, float]
    size: tuple[float, float, float]
    yaw: float = 0.0
    area: int = 0

    def check(self) -> Obstacle:
        """This obstacle with its fields as plain Python numbers (an array position, a yaw
        given as text, ...), or `VoxNavError` naming the bad field."""
        if self.kind not in KINDS:
            raise VoxNavError(f"obstacle kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        position = _vec3(self.position, "obstacle position")
        size = _vec3(self.size, "obstacle size")
        if min(size) <= 0:
            raise VoxNavError(
                f"{'an' if self.kind[0] in 'aeiou' else 'a'} {self.kind} obstacle needs a size "
                f"> 0 on every axis, got {list(size)}"
            )
        yaw = _number(self.yaw, "obstacle yaw")
        if not math.isfinite(yaw):
            raise VoxNavError(f"obstacle yaw must be finite, got {self.yaw}")
        area = _area_id(self.area)
        return replace(self, position=position, size=size, yaw=yaw, area=area)

    def moved_to(self, position) -> Obstacle:
        """The same shape with its ``position`` (as defined per kind) at a new point."""
        return replace(self, position=_vec3(position, "obstacle position"))

    def corners_xy(self) -> np.ndarray:
        """float64 (4, 2) X/Y outline of a box or oriented box, counter-clockwise."""
        px, py, _ = self.position
        sx, sy, _ = self.size
        if self.kind == BOX:
            return np.array([[px, py], [px + sx, py], [px + sx, py + sy], [px, py + sy]])
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        local = np.array([[-sx, -sy], [sx, -sy], [sx, sy], [-sx, sy]])
        rot = np.array([[c, -s], [s, c]])
        return np.array([px, py]) + local @ rot.T

    def z_range(self) -> tuple[float, float]:
        """Bottom and top heights. [Units: wu]"""
        z, h = self.position[2], self.size[2]
        if self.kind == ORIENTED_BOX:
            return z - h, z + h
        return z, z + h

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World AABB float64 (3,) min and max corners. [Units: wu]"""
        z0, z1 = self.z_range()
        if self.kind == CYLINDER:
            x, y, _ = self.position
            r = self.size[0]
            return np.array([x - r, y - r, z0]), np.array([x + r, y + r, z1])
        xy = self.corners_xy()
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        return np.array([lo[0], lo[1], z0]), np.array([hi[0], hi[1], z1])

    def box_xy(self) -> np.ndarray:
        """float64 (4,) X/Y bounds (xmin, ymin, xmax, ymax), the quadtree's item box."""
        lo, hi = self.bounds()
        return np.array([lo[0], lo[1], hi[0], hi[1]])

    def volume(self) -> AreaVolume:
        """The `AreaVolume` that marks this obstacle in a bake (the same marking rules)."""
        if self.kind == CYLINDER:
            return AreaVolume(
                "cylinder",
                (self.position,),
                int(self.area),
                radius=self.size[0],
                height=self.size[2],
            )
        if self.kind == BOX:
            lo, hi = self.bounds()
            return AreaVolume("box", (tuple(lo.tolist()), tuple(hi.tolist())), int(self.area))
        z0, z1 = self.z_range()
        outline = tuple(tuple(p) for p in self.corners_xy().tolist())
        return AreaVolume("convex", outline, int(self.area), zmin=z0, zmax=z1)

    def inside_xy(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """bool: are the X/Y points (arrays of one shape) inside the footprint (closed for
        boxes, strictly inside for the cylinder, like Recast's markers)?"""
        if self.kind == CYLINDER:
            cx, cy, _ = self.position
            r = self.size[0]
            return (x - cx) ** 2 + (y - cy) ** 2 < r * r
        px, py, _ = self.position
        if self.kind == BOX:
            sx, sy, _ = self.size
            return (x >= px) & (x <= px + sx) & (y >= py) & (y <= py + sy)
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        dx, dy = x - px, y - py
        lx, ly = c * dx + s * dy, -s * dx + c * dy
        return (np.abs(lx) <= self.size[0]) & (np.abs(ly) <= self.size[1])


def _number(value, name: str) -> float:
    """``value`` as a float; `VoxNavError` naming ``name`` when it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise VoxNavError(f"{name} must be a number, got {value!r}") from None


def _area_id(value) -> int:
    """An obstacle's area id: a whole number 0..63; `VoxNavError` otherwise."""
    number = _number(value, "obstacle area id")
    if not number.is_integer() or not 0 <= number <= 63:
        raise VoxNavError(
            f"obstacle area id must be a whole number 0..63 (0 blocks), got {value!r}"
        )
    return int(number)


def cylinder(center, radius: float, height: float, area: int = 0) -> Obstacle:
    """An upright cylinder: ``center`` its bottom centre (x, y, z) [Units: wu], ``radius`` and
    ``height`` [Units: wu] [Limit: > 0], ``area`` [Limit: 0..63]."""
    r, h = _number(radius, "cylinder radius"), _number(height, "cylinder height")
    return Obstacle(
        CYLINDER, _vec3(center, "cylinder centre"), (r, r, h), 0.0, _area_id(area)
    ).check()


def box(bmin, bmax, area: int = 0) -> Obstacle:
    """An axis-aligned box from its min and max corners (x, y, z) [Units: wu]."""
    lo = np.array(_vec3(bmin, "box min corner"))
    hi = np.array(_vec3(bmax, "box max corner"))
    if (hi <= lo).any():
        raise VoxNavError(
            f"box max corner {hi.tolist()} must be above its min corner {lo.tolist()} on every axis"
        )
    size = hi - lo
    return Obstacle(
        BOX, _vec3(lo, "box min corner"), (size[0], size[1], size[2]), 0.0, _area_id(area)
    ).check()


def oriented_box(center, half_extents, yaw: float, area: int = 0) -> Obstacle:
    """A box turned by ``yaw`` radians about Z around its ``center`` (x, y, z), with
    ``half_extents`` (hx, hy, hz) [Units: wu] [Limit: > 0]."""
    return Obstacle(
        ORIENTED_BOX,
        _vec3(center, "oriented box centre"),
        _vec3(half_extents, "oriented box half extents"),
        _number(yaw, "oriented box yaw"),
        _area_id(area),
    ).check()


#: Largest obstacle id `ObstacleSet.restore` takes (ids count the obstacles once held at
#: the same time; a million is beyond any scene, and each id below costs a quadtree slot).
MAX_RESTORED_ID = 1 << 20


class ObstacleSet:
    """Obstacles by integer id, indexed in a `QuadTree` on their X/Y bounds.

    Every change (add, remove, move, replace) records the X/Y boxes it touched (old and new
    place) until `take_changes`; a tile cache turns them into dirty tiles. Ids are the
    quadtree's (freed ids are reused, lowest first).
    """

    def __init__(self, bounds=(-1024.0, -1024.0, 1024.0, 1024.0), capacity: int = 8,
                 merge_below: int = 4):  # fmt: skip
        """bounds: the X/Y square the quadtree covers (obstacles outside it still work, held
        by the root) [Units: wu]; capacity / merge_below: `QuadTree`'s split and merge
        thresholds."""
        self.tree = QuadTree(bounds, capacity=capacity, merge_below=merge_below)
        self._shapes: dict[int, Obstacle] = {}
        self._changes: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self._shapes)

    def __contains__(self, obstacle_id: object) -> bool:
        return obstacle_id in self._shapes

    def ids(self) -> list[int]:
        return sorted(self._shapes)

    def get(self, obstacle_id: int, action: str = "read") -> Obstacle:
        """The obstacle of an id; an unknown id is a `VoxNavError` saying what could not be
        done (``action``: "move", say)."""
        return self._shapes[self._known(obstacle_id, action)]

    def _known(self, obstacle_id, action: str) -> int:
        try:  # whole numbers only: int(1.7) named obstacle 1, True obstacle 1
            whole = not isinstance(obstacle_id, bool | np.bool_)
            key = int(obstacle_id) if whole and float(obstacle_id).is_integer() else -1
        except (TypeError, ValueError, OverflowError):
            key = -1
        if key not in self._shapes:
            known = ", ".join(str(i) for i in sorted(self._shapes)) or "none"
            raise VoxNavError(
                f"cannot {action} obstacle {obstacle_id!r}: no such obstacle (ids in use: "
                f"{known}); it was never added or was already removed"
            )
        return key

    def add(self, obstacle: Obstacle) -> int:
        """Add a checked obstacle; returns its id."""
        obstacle = obstacle.check()
        box_xy = obstacle.box_xy()
        obstacle_id = int(self.tree.insert(box_xy[None])[0])
        self._shapes[obstacle_id] = obstacle
        self._changes.append(box_xy)
        return obstacle_id

    def restore(self, shapes: dict[int, Obstacle]) -> None:
        """Add checked obstacles under the given ids (a saved set) to this empty set, as if
        every id up to the largest had been added and the others removed again (which the
        next `add` reuses, lowest first): in two batches, not one quadtree insert per id.
        Ids [Limit: 0 .. `MAX_RESTORED_ID`]; `VoxNavError` beyond, or when the set is not
        empty."""
        if len(self) or self.tree.ids_handed_out:
            raise VoxNavError("obstacles are restored into an empty obstacle set only")
        if not shapes:
            return
        ids = sorted(shapes)
        if ids[0] < 0 or ids[-1] > MAX_RESTORED_ID:
            raise VoxNavError(
                f"obstacle ids must be 0..{MAX_RESTORED_ID:,}, got {ids[0]}..{ids[-1]}"
            )
        checked = {key: shapes[key].check() for key in ids}
        boxes = np.repeat(checked[ids[0]].box_xy()[None], ids[-1] + 1, axis=0)
        for key, obstacle in checked.items():
            boxes[key] = obstacle.box_xy()
        given = self.tree.insert(boxes)
        assert given.tolist() == list(range(ids[-1] + 1)), "a fresh tree hands out 0, 1, ..."
        unused = np.setdiff1d(given, np.array(ids, dtype=np.int64))
        if unused.shape[0]:
            self.tree.remove(unused)
        self._shapes.update(checked)
        self._changes.extend(boxes[ids])

    def remove(self, obstacle_id: int) -> Obstacle:
        """Remove an obstacle; returns its shape. An unknown id is a `VoxNavError`."""
        key = self._known(obstacle_id, "remove")
        self.tree.remove([key])
        shape = self._shapes.pop(key)
        self._changes.append(shape.box_xy())
        return shape

    def replace(self, obstacle_id: int, obstacle: Obstacle) -> None:
        """Give an obstacle a new shape (kind, size, turn or place), keeping its id."""
        key = self._known(obstacle_id, "change")
        obstacle = obstacle.check()
        old = self._shapes[key].box_xy()
        new = obstacle.box_xy()
        self.tree.move([key], new[None])
        self._shapes[key] = obstacle
        self._changes.extend([old, new])

    def move(self, obstacle_id: int, position) -> None:
        """Move an obstacle's ``position`` (cylinder bottom centre, box min corner, oriented
        box centre) to a new point. [Units: wu]"""
        key = self._known(obstacle_id, "move")
        self.replace(key, self._shapes[key].moved_to(position))

    def take_changes(self) -> np.ndarray:
        """float64 (k, 4) X/Y boxes touched since the last call, and forget them."""
        out = np.array(self._changes, dtype=np.float64).reshape(-1, 4)
        self._changes = []
        return out

    def touching(self, box_xy) -> list[int]:
        """Ids (ascending) of obstacles whose X/Y bounds overlap a box (xmin, ymin, xmax,
        ymax) [Units: wu]: a quadtree range query."""
        return [int(i) for i in self.tree.query(box_xy)]

    def volumes(self, ids=None) -> tuple[AreaVolume, ...]:
        """The `AreaVolume` of each obstacle (all, or the given ids), in id order: the order
        a bake paints them."""
        keys = self.ids() if ids is None else sorted(int(i) for i in ids)
        return tuple(self._shapes[k].volume() for k in keys)


def checked(obstacle) -> Obstacle:
    """``obstacle`` with its fields as plain numbers (`Obstacle.check`), or `VoxNavError` when
    it is no `Obstacle` or a field is bad."""
    if not isinstance(obstacle, Obstacle):
        raise VoxNavError(
            f"obstacles are core.obstacles.Obstacle values (made by cylinder, box or "
            f"oriented_box), got {type(obstacle).__name__}"
        )
    return obstacle.check()


def block_voxels(grid: VoxelGrid, obstacles) -> VoxelGrid:
    """A copy of ``grid`` with every voxel whose centre is inside an obstacle set (solid).

    obstacles: an iterable of `Obstacle`. A voxel's centre is inside when its X/Y is inside
    the footprint (`Obstacle.inside_xy`) and its Z within the obstacle's [bottom, top]. The grid
    grows upwards when an obstacle reaches above it, so an obstacle standing on the highest
    floor is still there; voxels below the grid or off its X/Y are dropped. A grid that
    would grow past what path finding handles is refused before it is allocated
    (`core.nav.voxel_path.check_grid_size`: a 100 km tall crate allocated 58 GiB).
    """
    from .nav.voxel_path import check_grid_size

    if isinstance(obstacles, (Obstacle, str)):
        raise VoxNavError("obstacles must be a list of Obstacle values (one obstacle: [it])")
    try:
        shapes = [checked(shape) for shape in obstacles]
    except TypeError:
        raise VoxNavError("obstacles must be a list of Obstacle values") from None
    cs, ch = float(grid.cs), float(grid.ch)
    bmin = np.asarray(grid.bmin, dtype=np.float64)
    ranges = []
    depth = grid.depth
    for shape in shapes:  # one per obstacle; each step is vectorized over its footprint
        lo, hi = shape.bounds()
        z0, z1 = shape.z_range()
        iz0 = max(math.ceil((z0 - bmin[2]) / ch - 0.5), 0)
        iz1 = math.floor((z1 - bmin[2]) / ch - 0.5)
        ix0 = max(math.floor((lo[0] - bmin[0]) / cs - 0.5), 0)
        ix1 = min(math.ceil((hi[0] - bmin[0]) / cs - 0.5), grid.width - 1)
        iy0 = max(math.floor((lo[1] - bmin[1]) / cs - 0.5), 0)
        iy1 = min(math.ceil((hi[1] - bmin[1]) / cs - 0.5), grid.height - 1)
        if iz1 < iz0 or ix1 < ix0 or iy1 < iy0:
            continue
        ranges.append((shape, iz0, iz1, ix0, ix1, iy0, iy1))
        depth = max(depth, iz1 + 1)
    if depth > grid.depth:
        try:
            check_grid_size(grid.width, grid.height, depth)
        except VoxNavError:
            raise VoxNavError(
                f"a dynamic obstacle reaches {(depth - grid.depth) * ch:g} wu above the top of "
                f"the voxels: the grid would grow to {grid.width} x {grid.height} x {depth} "
                "voxels, more than voxel path finding handles; make the obstacle lower"
            ) from None
    words = max(1, -(-depth // WORD_BITS))
    bits = np.zeros((grid.height, grid.width, words), dtype=np.uint32)
    bits[:, :, : grid.bits.shape[2]] = grid.bits
    word_index = np.arange(words, dtype=np.int64)
    for shape, iz0, iz1, ix0, ix1, iy0, iy1 in ranges:
        xs = bmin[0] + (np.arange(ix0, ix1 + 1) + 0.5) * cs
        ys = bmin[1] + (np.arange(iy0, iy1 + 1) + 0.5) * cs
        inside = shape.inside_xy(xs[None, :], ys[:, None])
        lo_bit = np.clip(iz0 - word_index * WORD_BITS, 0, WORD_BITS).astype(np.uint64)
        hi_bit = np.clip(iz1 + 1 - word_index * WORD_BITS, 0, WORD_BITS).astype(np.uint64)
        one = np.uint64(1)
        mask = (((one << hi_bit) - one) & ~((one << lo_bit) - one)).astype(np.uint32)
        block = bits[iy0 : iy1 + 1, ix0 : ix1 + 1]
        block |= np.where(inside[:, :, None], mask[None, None, :], np.uint32(0))
    return VoxelGrid(
        grid.width, grid.height, depth, bmin.astype(np.float32), grid.cs, grid.ch, bits
    )
