"""Limits said aloud: where Recast's fixed-width fields or float32 would give a wrong result.

Each check either warns through the build context (``ctx.warn``: the bake is still right where
it matters) or refuses with a `VoxNavError` (the result would be wrong without a word), and
always says what to change:

- a grid with no or too little extent across X or Y (flat geometry, a wall seen edge-on);
- coordinates so far from the origin that float32 cannot place the voxels (recentre);
- agent height or climb above the 255 cells of Recast's 8-bit clearance field, agent radius
  above the 127 cells its 8-bit erosion distance can reach;
- walkable surfaces above the 13-bit span height range (8191 cell heights above the grid's
  bottom), which Recast clamps silently (a larger cell height or tighter bounds).
"""

from __future__ import annotations

import numpy as np

from .config import MIN_CELL, SPAN_MAX_HEIGHT, DerivedConfig, NavConfig
from .context import BuildContext
from .errors import VoxNavError

#: Largest clearance / climb Recast can store: rcCompactSpan::h is 8 bits. [Units: ch]
MAX_CLEARANCE = 255
#: Largest erosion radius: rcErodeWalkableArea compares an 8-bit distance with 2 * radius
#: (wider radii wrap around in Recast). [Units: cells]
MAX_ERODE_RADIUS = 127
#: Largest grid a bake can index (column ids are packed into sort keys). [Units: columns]
MAX_COLUMNS = 2**31
#: Warn when float32 coordinates at the grid are further apart than this share of a cell.
PRECISION_WARN_SHARE = 1.0 / 16.0
#: Largest coordinate or size VoxNav takes for an area volume, an obstacle, an off-mesh link
#: or a query point [Units: wu]: far beyond any grid float32 can place voxels in
#: (`check_precision` refuses grids some 10^7 m out), and small enough that the float32
#: arithmetic on it (differences, products of two, squared distances) stays finite; a shape
#: reaching past it would mark nothing more, a point there is off every navmesh.
MAX_COORDINATE = 1e9
#: Most worker processes a bake takes (``workers`` of the tiled, per-agent and solo bakes, the
#: CLIs' ``--workers``, the add-on's Tile Workers): each process holds its own interpreter,
#: NumPy and tile (some 100 MiB), so far more than the cores only fills memory (a million asked
#: for forked thousands of processes and 23 GB before failing). [Units: processes]
MAX_WORKERS = 256

_AXES = "XYZ"


def within_reach(values) -> np.ndarray:
    """bool per value: a finite number within +-`MAX_COORDINATE` (NaN and infinities: False)."""
    return np.abs(np.asarray(values, dtype=np.float64)) <= MAX_COORDINATE


def number_rows(values, width: int, what: str, row: str) -> np.ndarray:
    """float64 (n, ``width``) rows from one row, n of them, or none (n = 0); `VoxNavError`
    naming ``what`` and its ``row`` (such as "(x, y, z)") for anything else (a reshape to
    (-1, 3) made a (3, 4) array four scrambled points). Values are not checked here."""
    try:
        rows = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise VoxNavError(f"{what} must be numbers {row}") from None
    if rows.size == 0:
        return np.zeros((0, width))
    if rows.shape == (width,):
        return rows.reshape(1, width)
    if rows.ndim != 2 or rows.shape[1] != width:
        raise VoxNavError(
            f"{what} must be {row} each, an (n, {width}) array; got shape {rows.shape}"
        )
    return rows


def xyz_rows(values, what: str) -> np.ndarray:
    """float64 (n, 3) points (`number_rows` of (x, y, z)); values are not checked here
    (`within_reach`). [Units: wu]"""
    return number_rows(values, 3, what, "(x, y, z)")


def whole_indices(indices, what: str = "tris", noun: str = "vertex indices") -> np.ndarray:
    """``indices`` as an array of whole numbers in their own dtype (integers, or floats that
    are whole); `VoxNavError` naming ``what`` (holding ``noun``) for text, booleans, complex
    numbers or fractions (a cast to int truncated 0.9 to vertex 0)."""
    try:
        array = np.asarray(indices)
    except (TypeError, ValueError) as exc:
        raise VoxNavError(f"{what} must be a numeric array: {exc}") from None
    if array.dtype.kind not in "iuf":
        kinds = {"U": "text", "S": "bytes", "c": "complex numbers", "b": "booleans"}
        got = kinds.get(array.dtype.kind, f"{array.dtype} values")
        raise VoxNavError(f"{what} must hold whole-number {noun}, got {got}")
    if array.dtype.kind == "f" and not np.all(np.mod(array, 1) == 0):
        raise VoxNavError(f"{what} must hold whole-number {noun}")
    return array


def check_shape_values(values, what: str) -> None:
    """Refuse an area volume's or obstacle's numbers (coordinates, sizes) that are not finite
    or lie beyond +-`MAX_COORDINATE` [Units: wu], naming ``what`` and the values."""
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        raise VoxNavError(f"{what} must be finite numbers, got {v.tolist()}")
    if v.size and float(np.abs(v).max()) > MAX_COORDINATE:
        raise VoxNavError(
            f"{what} must lie within +-{MAX_COORDINATE:g} m (far beyond any grid), got "
            f"{v.tolist()}: check its units and position"
        )


def check_workers(workers: object) -> int:
    """``workers`` as an int: refuse (`VoxNavError`) anything but a whole number (an int, not a
    bool, float or string) from 1 to `MAX_WORKERS`. [Units: processes]"""
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)):
        raise VoxNavError(
            f"workers must be a whole number from 1 to {MAX_WORKERS}, got {workers!r} "
            f"({type(workers).__name__})"
        )
    if not 1 <= workers <= MAX_WORKERS:
        raise VoxNavError(
            f"workers must be a whole number from 1 to {MAX_WORKERS} (processes baking at "
            f"once; about one per core pays), got {workers}"
        )
    return int(workers)


def round_up(value: float) -> float:
    """Up to two significant digits, up: the setting a refusal suggests (0.2441 -> 0.25)."""
    if value <= 0:
        return value
    step = 10.0 ** (int(np.floor(np.log10(value))) - 1)
    return float(np.ceil(value / step - 1e-9) * step)


def _round_down(value: float) -> float:
    """Down to two significant digits (0.1449 -> 0.14)."""
    if value <= 0:
        return value
    step = 10.0 ** (int(np.floor(np.log10(value))) - 1)
    return float(np.floor(value / step + 1e-9) * step)


def check_grid(
    bmin, bmax, config: NavConfig, derived: DerivedConfig, ctx: BuildContext | None = None
) -> None:
    """Refuse grids without (enough) extent on X or Y; check the agent's 8-bit fields.
    ``bmin``/``bmax``: grid corners (3,) Z-up [Units: wu]."""
    lo = np.asarray(bmin, dtype=np.float64)
    hi = np.asarray(bmax, dtype=np.float64)
    ext = hi - lo
    cs = float(derived.cs)
    for axis in (0, 1):
        name = _AXES[axis]
        # Thinner than half the smallest cell size is flat too: no cell size gives it a column
        # (a wall turned 90 degrees is 4.4e-07 wide in float32, and was told cell_size 4.3e-07).
        if ext[axis] <= 0 or 2 * ext[axis] < MIN_CELL:
            where = (
                f"every vertex has {name.lower()} = {lo[axis]:g}"
                if ext[axis] <= 0
                else f"every vertex is within {ext[axis]:.3g} of {name.lower()} = {lo[axis]:g}"
            )
            raise VoxNavError(
                f"the geometry is flat along {name} ({where}), so the grid has no columns: it "
                "is a wall seen edge-on or a line, "
                "with no floor to walk on; floors must lie in the X/Y plane (Z is up): check the "
                "geometry's orientation, or give bounds_min/bounds_max with an extent on X and Y"
            )
        if ext[axis] / cs + 0.5 < 1:
            raise VoxNavError(
                f"the geometry is only {ext[axis]:g} wide along {name}, less than half a cell "
                f"(cell_size {config.cell_size:g}), so the grid has no columns: use cell_size <= "
                f"{max(_round_down(ext[axis]), MIN_CELL):g}, or widen the bounds along {name}"
            )
    check_agent_fields(config, derived, ctx)


def check_columns(bmin, bmax, config: NavConfig) -> None:
    """Refuse a grid of more than `MAX_COLUMNS` columns (reached only with a memory_limit
    large enough to let it through), saying the extent and a cell size that fits."""
    ext = np.asarray(bmax, dtype=np.float64) - np.asarray(bmin, dtype=np.float64)
    cs = float(np.float32(config.cell_size))
    width = int(np.floor(ext[0] / cs + 0.5))
    height = int(np.floor(ext[1] / cs + 0.5))
    if width * height > MAX_COLUMNS:
        fit = round_up((ext[0] * ext[1] / MAX_COLUMNS) ** 0.5 * 1.01)
        raise VoxNavError(
            f"the grid would have {float(width) * height:.3g} columns: the geometry spans "
            f"{ext[0]:,.6g} x {ext[1]:,.6g} m (X x Y) at cell_size {config.cell_size:g}, more "
            f"than the {MAX_COLUMNS:,} a bake can index: use cell_size >= {fit:g}, bake a "
            "smaller region with bounds_min/bounds_max, or check for stray vertices far from "
            "the rest"
        )


#: Cells a navmesh's grid may have along X or Y: its polygon mesh's vertices are 16-bit cell
#: coordinates (Recast's and Detour's unsigned shorts). [Units: cells]
MAX_NAVMESH_CELLS = 0xFFFF


def check_navmesh_extent(bmin, bmax, config: NavConfig) -> None:
    """Refuse a navmesh bake (not a voxelization) whose grid has more than
    `MAX_NAVMESH_CELLS` cells along X or Y: the polygon mesh's vertices would wrap (a floor
    19.7 km from a stray triangle came out 19.66 km off, silently). Tiled bakes index cells
    per tile and take such worlds."""
    ext = np.asarray(bmax, dtype=np.float64) - np.asarray(bmin, dtype=np.float64)
    cs = float(np.float32(config.cell_size))
    for axis in (0, 1):
        cells = int(np.floor(ext[axis] / cs + 0.5))
        if cells > MAX_NAVMESH_CELLS:
            fit = round_up(ext[axis] / MAX_NAVMESH_CELLS * 1.01)
            raise VoxNavError(
                f"the grid is {cells:,} cells along {_AXES[axis]} ({ext[axis]:,.6g} m at "
                f"cell_size {config.cell_size:g}); a navmesh's vertices are 16-bit cell "
                f"coordinates (Recast's and Detour's), at most {MAX_NAVMESH_CELLS:,}: bake with "
                f"tiles (tile_size), use cell_size >= {fit:g}, bake a smaller region with "
                "bounds_min/bounds_max, or check for stray geometry far from the rest"
            )


def check_precision(bmin, bmax, derived: DerivedConfig, ctx: BuildContext | None = None) -> None:
    """Refuse a grid whose float32 coordinates are further apart than a cell (cell_size on
    X/Y, cell_height on Z) at its corners; warn when they are more than
    `PRECISION_WARN_SHARE` of a cell apart. Both say the offset to recentre by."""
    lo = np.asarray(bmin, dtype=np.float64)
    hi = np.asarray(bmax, dtype=np.float64)
    cs, ch = float(derived.cs), float(derived.ch)
    magnitude_xy = float(np.abs(np.concatenate([lo[:2], hi[:2]])).max())
    magnitude_z = float(max(abs(lo[2]), abs(hi[2])))
    step_xy = float(np.spacing(np.float32(magnitude_xy)))
    step_z = float(np.spacing(np.float32(magnitude_z)))
    share = max(step_xy / cs, step_z / ch)
    if share <= PRECISION_WARN_SHARE:
        return
    centre = (lo + hi) / 2
    offset = ", ".join(f"{-c + 0.0:.6g}" for c in centre)
    what = (
        f"the grid lies up to {max(magnitude_xy, magnitude_z):,.6g} m from the origin, where "
        f"float32 coordinates are {step_xy:g} apart on X/Y and {step_z:g} on Z (cell_size "
        f"{cs:g}, cell_height {ch:g})"
    )
    fix = f"recentre the geometry near the origin (move it by ({offset}) and move the result back)"
    if share >= 1.0:
        raise VoxNavError(
            f"{what}: voxels smaller than that spacing cannot be placed, and the result would "
            f"differ from the same scene near the origin; {fix}"
        )
    if ctx is not None:
        ctx.warn(
            f"{what}: cells are only a few float32 steps wide there, so the result may differ "
            f"from the same scene near the origin; {fix}"
        )


def check_agent_fields(
    config: NavConfig, derived: DerivedConfig, ctx: BuildContext | None = None
) -> None:
    """Refuse an agent radius or height Recast's 8-bit fields cannot hold (the navmesh would
    be wrong); warn (through ``ctx``) of a climb above them (steps that high never connect)."""
    ch = float(derived.ch)
    if derived.walkable_radius > MAX_ERODE_RADIUS:
        raise VoxNavError(
            f"agent_radius {config.agent_radius:g} is {derived.walkable_radius} cells, more than "
            f"the {MAX_ERODE_RADIUS} that Recast's 8-bit erosion distance can reach: use "
            f"cell_size >= {round_up(config.agent_radius / MAX_ERODE_RADIUS):g} or an "
            f"agent_radius of at most {_round_down(MAX_ERODE_RADIUS * float(derived.cs)):g}"
        )
    if derived.walkable_height > MAX_CLEARANCE:
        raise VoxNavError(
            f"agent_height {config.agent_height:g} is {derived.walkable_height} cell heights, "
            f"more than the {MAX_CLEARANCE} that Recast's 8-bit clearance field can hold, so no "
            f"span would ever be tall enough to walk: use cell_height >= "
            f"{round_up(config.agent_height / MAX_CLEARANCE):g} or a lower agent_height"
        )
    if derived.walkable_climb > MAX_CLEARANCE and ctx is not None:
        ctx.warn(
            f"agent_max_climb {config.agent_max_climb:g} is {derived.walkable_climb} cell "
            f"heights, more than the {MAX_CLEARANCE} that Recast's 8-bit clearance field can "
            f"hold: steps higher than {MAX_CLEARANCE * ch:g} are never connected; use "
            f"cell_height >= {round_up(config.agent_max_climb / MAX_CLEARANCE):g} or a lower "
            "agent_max_climb"
        )


def exceeds_height_range(bmin, bmax, derived: DerivedConfig) -> bool:
    """Whether the grid bmin..bmax reaches above the 13-bit span height range
    (`SPAN_MAX_HEIGHT` cell heights above ``bmin[2]``); only then can `check_heights` find
    anything. [Units: wu]"""
    top = float(np.asarray(bmin, dtype=np.float64)[2]) + SPAN_MAX_HEIGHT * float(derived.ch)
    return float(np.asarray(bmax, dtype=np.float64)[2]) > top


def check_heights(
    verts,
    tris,
    tri_areas,
    bmin,
    bmax,
    config: NavConfig,
    derived: DerivedConfig,
    ctx: BuildContext | None = None,
) -> None:
    """Spans above Recast's 13-bit height range (`SPAN_MAX_HEIGHT` cell heights above
    ``bmin[2]``) are clamped to it. Refuse when a walkable triangle reaches above the range
    (its navmesh would sit at the wrong height); warn when only non-walkable ones do (their
    tops are clamped, which only matters above the range). ``tri_areas`` uint8 (m,) from
    walkable marking; heights are clipped to ``bmax[2]`` first, as rasterization does."""
    if not exceeds_height_range(bmin, bmax, derived):
        return
    lo = np.asarray(bmin, dtype=np.float64)
    hi = np.asarray(bmax, dtype=np.float64)
    ch = float(derived.ch)
    top = lo[2] + SPAN_MAX_HEIGHT * ch
    v = np.asarray(verts, dtype=np.float64)
    t = np.asarray(tris, dtype=np.int64)
    corners = v[t]  # (m, 3, 3)
    tmin = corners.min(axis=1)
    tmax = corners.max(axis=1)
    inside = ((tmin <= hi) & (tmax >= lo)).all(axis=1)
    reach = np.minimum(tmax[:, 2], hi[2])
    above = inside & (reach > top)
    if not above.any():
        return
    walkable = above & (np.asarray(tri_areas) != 0)
    highest = float(reach[walkable].max() if walkable.any() else reach[above].max())
    lowest = float(tmin[inside, 2].min())
    fits_ch = round_up((highest - lo[2]) / SPAN_MAX_HEIGHT * 1.001)
    what = (
        f"heights above z = {top:g} ({SPAN_MAX_HEIGHT} cell heights of {ch:g} above the grid's "
        f"bottom at z = {lo[2]:g}) cannot be stored and are clamped to it, as Recast does"
    )
    fix = f"use cell_height >= {fits_ch:g}"
    if lowest > lo[2]:
        fix += f", or raise bounds_min z to about {lowest:g} (the lowest geometry)"
    else:
        fix += f", or lower bounds_max z to {top:g} (drops what is above)"
    if walkable.any():
        raise VoxNavError(
            f"{int(walkable.sum()):,} walkable triangles reach up to z = {highest:g}, but {what}: "
            f"their navmesh would sit at the wrong height; {fix}"
        )
    if ctx is not None:
        ctx.warn(
            f"{int(above.sum()):,} non-walkable triangles reach up to z = {highest:g}, but {what} "
            f"(walkable surfaces are all below); {fix}"
        )
