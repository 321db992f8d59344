"""Limits said aloud (core.limits): each case warns through the build context or refuses with
what to change, never a silently wrong result."""

from __future__ import annotations

import re

import numpy as np
import pytest

from core import memory, pipeline
from core.config import NavConfig
from core.errors import VoxNavError


def quad(x0, y0, x1, y1, z) -> np.ndarray:
    return np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]], np.float64)


def soup(*quads) -> tuple[np.ndarray, np.ndarray]:
    """Quads (4 corners each, counter-clockwise seen from above) as a triangle soup."""
    verts = np.vstack(quads).astype(np.float32)
    tris = [[4 * k, 4 * k + 1, 4 * k + 2] for k in range(len(quads))]
    tris += [[4 * k, 4 * k + 2, 4 * k + 3] for k in range(len(quads))]
    return verts, np.array(tris, np.int32)


def wall(x0, x1, y, z0, z1) -> np.ndarray:
    """A vertical quad in the plane y = const."""
    return np.array([[x0, y, z0], [x1, y, z0], [x1, y, z1], [x0, y, z1]], np.float64)


FLOOR = quad(0, 0, 10, 10, 0)


# ----------------------------------------------------------------------------------------------
# 13-bit span heights (8191 cell heights)


def test_floor_above_the_height_range_is_refused():
    """A floor at z = 2000 over a grid starting at z = 0 (a wall reaches down there): Recast
    clamps it to 8191 * 0.2 = 1638.2, so its navmesh would float 360 m too low."""
    verts, tris = soup(quad(0, 0, 10, 10, 2000), wall(0, 10, 12, 0, 1))
    with pytest.raises(VoxNavError) as info:
        pipeline.bake(verts, tris)
    message = str(info.value)
    assert "walkable triangles" in message and "8191" in message and "clamped" in message
    fit = float(re.search(r"cell_height >= ([0-9.]+)", message).group(1))
    assert fit * 8191 >= 2000 and fit < 0.3
    result = pipeline.bake(verts, tris, NavConfig(cell_height=fit))
    top = result.heightfield.smax.max() * np.float32(fit)
    assert abs(float(top) - 2000) < 2 * fit


def test_bounds_far_below_the_floor_are_refused():
    """bounds_min z = -2000 puts the floor at z = 0 10000 cell heights up."""
    verts, tris = soup(FLOOR)
    config = NavConfig(bounds_min=(-1, -1, -2000), bounds_max=(11, 11, 10))
    with pytest.raises(VoxNavError, match=r"8191.*bounds_min z to about 0"):
        pipeline.bake(verts, tris, config)


def test_tall_obstacle_above_the_range_warns():
    """Only a non-walkable wall reaches above the range: the bake is right below it, so it
    warns (with what to change) instead of refusing."""
    verts, tris = soup(FLOOR, wall(0, 10, 11, 0, 2000))
    result = pipeline.bake(verts, tris)
    assert result.counts["polys"] > 0
    assert any(
        "non-walkable triangles" in w and "8191" in w and "cell_height >=" in w
        for w in result.warnings
    ), result.warnings


# ----------------------------------------------------------------------------------------------
# float32 precision far from the origin


def test_far_offset_is_refused_with_a_recentring_hint():
    """At 1e7 float32 coordinates are 1 m apart, more than a 0.3 m cell."""
    verts, tris = soup(FLOOR + np.array([1e7, 1e7, 0]))
    with pytest.raises(VoxNavError) as info:
        pipeline.bake(verts, tris)
    message = str(info.value)
    assert "float32" in message and "recentre" in message and "1e+07" in message


def test_large_offset_warns():
    """At 1e6 float32 coordinates are 0.0625 apart: a fifth of a cell. The bake runs and says
    that the result may differ from the same scene near the origin."""
    verts, tris = soup(quad(0, 0, 20, 20, 0) + np.array([1e6, 1e6, 0]))
    result = pipeline.bake(verts, tris)
    assert any("float32" in w and "recentre" in w for w in result.warnings), result.warnings
    near = pipeline.bake(*soup(quad(0, 0, 20, 20, 0)))
    assert not any("float32" in w for w in near.warnings)


# ----------------------------------------------------------------------------------------------
# 8-bit agent fields


def test_agent_taller_than_the_clearance_field_is_refused():
    verts, tris = soup(FLOOR)
    with pytest.raises(VoxNavError, match=r"agent_height 60 is 300 cell heights.*255.*"
                       r"cell_height >= 0\.24"):  # fmt: skip
        pipeline.bake(verts, tris, NavConfig(agent_height=60.0))


def test_climb_above_the_clearance_field_warns():
    verts, tris = soup(FLOOR)
    result = pipeline.bake(verts, tris, NavConfig(agent_height=10.0, agent_max_climb=60.0))
    assert any(
        "agent_max_climb 60" in w and "255" in w and "cell_height >=" in w for w in result.warnings
    ), result.warnings


# ----------------------------------------------------------------------------------------------
# Messages: huge extents, flat geometry


def test_huge_coordinates_give_the_extent_and_a_cell_size():
    """A stray vertex at 1e12 m: no 60-digit column count, but the extent in metres and a
    rounded cell size that fits."""
    verts, tris = soup(FLOOR)
    verts = np.vstack([verts, [[1e12, 1e12, 0], [1e12 + 1, 1e12, 0], [1e12, 1e12 + 1, 0]]])
    tris = np.vstack([tris, [[4, 5, 6]]]).astype(np.int32)
    with pytest.raises(VoxNavError) as info:
        pipeline.bake(verts.astype(np.float32), tris)
    message = str(info.value)
    assert not re.search(r"\d{16,}", message.replace(",", "")), message
    assert "1e+12 x 1e+12 m" in message and "stray vertices" in message
    fit = float(re.search(r"cell_size >= ([0-9.e+]+)", message).group(1))
    assert len(f"{fit:.6g}".replace(".", "").split("e")[0].strip("0")) <= 2
    bmin, bmax = verts.min(axis=0), verts.max(axis=0)
    config = NavConfig(cell_size=fit)
    assert max(e.bytes for e in memory.estimate_bake(verts, tris, bmin, bmax, config)) <= (
        config.memory_limit
    )


def test_huge_memory_limit_still_refuses_an_unindexable_grid():
    """With memory_limit at its 1 PiB maximum a 100 km grid at 0.3 m (1.1e11 columns) passes
    the memory check but not the column index."""
    verts, tris = soup(FLOOR)
    verts = np.vstack([verts, [[1e5, 1e5, 0], [1e5 + 1, 1e5, 0], [1e5, 1e5 + 1, 0]]])
    tris = np.vstack([tris, [[4, 5, 6]]]).astype(np.int32)
    with pytest.raises(
        VoxNavError, match=r"1\.11e\+11 columns.*100,001 x 100,001 m.*cell_size >= "
    ):
        pipeline.bake(verts.astype(np.float32), tris, NavConfig(memory_limit=2**50))


@pytest.mark.parametrize(("axis", "name"), [(0, "X"), (1, "Y")])
def test_flat_geometry_names_the_axis(axis, name):
    """A wall seen edge-on (all vertices share one x or y): the grid has no columns. Lowering
    cell_size would never help; the message says which axis is flat and what to check."""
    verts, tris = soup(wall(0, 10, 0, 0, 3))
    if axis == 0:
        verts = verts[:, [1, 0, 2]].copy()
    with pytest.raises(VoxNavError) as info:
        pipeline.bake(verts, tris)
    message = str(info.value)
    assert f"flat along {name}" in message and "Z is up" in message
    assert "lower cell_size" not in message


def test_a_wall_thinner_than_any_cell_is_flat():
    """A wall turned 90 degrees about X in Blender is 4.4e-07 wide on Y in float32: it was told
    to use cell_size <= 4.3e-07, below the smallest cell size (0.001), which would not help."""
    angle = np.float32(np.pi / 2)
    verts, tris = soup(wall(0, 10, 0, 0, 3))
    verts[:, 1] += np.float32(np.cos(angle)) * verts[:, 2]  # as a rotated plane lands
    assert 0 < np.ptp(verts[:, 1]) < 1e-6
    with pytest.raises(VoxNavError, match=r"flat along Y \(every vertex is within 1\.31e-07"):
        pipeline.bake(verts, tris)
    # 0.8 mm wide: the smallest cell size holds it (never a size below that is suggested).
    verts, tris = soup(quad(0, 0, 0.0008, 10, 0))
    with pytest.raises(VoxNavError, match=r"only 0\.0008 wide along X.*cell_size <= 0\.001,"):
        pipeline.bake(verts, tris)


def test_thin_geometry_says_how_thin():
    verts, tris = soup(quad(0, 0, 0.1, 10, 0))
    with pytest.raises(VoxNavError, match=r"only 0\.1 wide along X.*cell_size <= 0\.1"):
        pipeline.bake(verts, tris)


def test_a_navmesh_wider_than_16_bit_cells_is_refused_and_tiles_take_it():
    """A 10 x 5 m floor 19.7 km from a stray down-facing triangle: 65,700 cells along X. The
    polygon mesh's 16-bit cell coordinates wrapped, and the navmesh came out at x 40..48 m,
    silently. Voxelizing needs no polygon mesh; a tiled bake indexes cells per tile."""
    from core import tiles

    verts = np.array(
        [[19700, 0, 0], [19710, 0, 0], [19710, 5, 0], [19700, 5, 0],
         [0, 0, 0], [0, 1, 0], [1, 0, 0]], np.float32,
    )  # fmt: skip
    tris = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6]], np.int32)
    with pytest.raises(VoxNavError, match=r"65,700 cells along X.*16-bit.*bake with tiles"):
        pipeline.bake(verts, tris, NavConfig())
    assert pipeline.bake(verts, tris, NavConfig(), stop_after="heightfield").heightfield
    tiled = tiles.bake_tiled(verts, tris, NavConfig(), 64, workers=1)
    nav = tiled.navmesh()
    ground = nav.poly_type == 0
    xs = nav.poly_pos[ground][:, :, 0][np.arange(6)[None, :] < nav.poly_vert_count[ground, None]]
    assert tiled.npolys > 0 and 19699.0 < xs.min() and xs.max() < 19711.0
