"""Bad input raises VoxNavError with an actionable message, before anything large is allocated."""

from __future__ import annotations

import numpy as np
import pytest

from core import pipeline
from core.__main__ import main
from core.config import NavConfig
from core.errors import VoxNavError
from core.heightfield import VoxelGrid
from core.objio import read_obj

QUAD = np.array([[0, 0, 0], [4, 0, 0], [4, 4, 0], [0, 4, 0]], np.float32)
QUAD_TRIS = np.array([[0, 1, 2], [0, 2, 3]], np.int32)


def test_empty_mesh():
    with pytest.raises(VoxNavError, match="no triangles"):
        pipeline.bake(np.zeros((0, 3)), np.zeros((0, 3), int))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_infinite_coordinates(bad):
    verts = QUAD.copy()
    verts[2, 1] = bad
    with pytest.raises(VoxNavError, match="NaN or infinite.*vertex 2"):
        pipeline.bake(verts, QUAD_TRIS)


def test_index_out_of_range():
    with pytest.raises(VoxNavError, match="triangle 1 refers to vertex 9"):
        pipeline.bake(QUAD, np.array([[0, 1, 2], [0, 2, 9]]))


@pytest.mark.parametrize(
    "tris, words",
    [
        (np.array([[0, 1, 2], [0, 2, 3]]).astype(str), "got text"),
        (np.array([[0, 1, 2], [0, 2, 3]]).astype(complex), "got complex numbers"),
        (np.array([[0, 1, 2**63]], dtype=np.uint64), "vertex 9223372036854775808,"),
        (np.array([[0.0, 1.0, 1e20]]), "vertex 100000000000000000000,"),
        (np.array([[0.0, 1.0, 2.5]]), "whole-number"),
    ],
)
def test_triangle_indices_of_the_wrong_kind_are_named_as_given(tris, words):
    # Text and complex indices gave a raw TypeError; 2**63 and 1e20 were named as the
    # int64-wrapped -9223372036854775808.
    with pytest.raises(VoxNavError, match=words):
        pipeline.bake(QUAD, tris)


def test_wrong_shapes():
    with pytest.raises(VoxNavError, match=r"verts must have shape \(n, 3\)"):
        pipeline.bake(QUAD[:, :2], QUAD_TRIS)
    with pytest.raises(VoxNavError, match=r"tris must have shape \(m, 3\)"):
        pipeline.bake(QUAD, np.array([0, 1, 2, 3]).reshape(1, 4))


@pytest.mark.parametrize("setting", ["cell_size", "cell_height", "agent_height"])
@pytest.mark.parametrize("value", [0.0, -1.0])
def test_non_positive_sizes(setting, value):
    with pytest.raises(VoxNavError, match=f"{setting} must be from .* got {value}"):
        pipeline.bake(QUAD, QUAD_TRIS, NavConfig(**{setting: value}))


def test_negative_radius_and_bad_slope():
    with pytest.raises(VoxNavError, match="agent_radius must be from 0 to 100000 wu"):
        NavConfig(agent_radius=-0.1).validate()
    with pytest.raises(VoxNavError, match="agent_max_slope"):
        NavConfig(agent_max_slope=90).validate()
    with pytest.raises(VoxNavError, match="verts_per_poly"):
        NavConfig(verts_per_poly=7).validate()
    with pytest.raises(VoxNavError, match="unknown setting"):
        NavConfig().replace(cell_sise=0.2)


def test_grid_too_large_is_refused_before_allocating():
    huge = QUAD * np.float32(10000)
    with pytest.raises(VoxNavError) as info:
        pipeline.bake(huge, QUAD_TRIS, NavConfig(cell_size=0.01, memory_limit=2 * 1024**3))
    message = str(info.value)
    assert "columns" in message and "GiB" in message and "use cell_size >=" in message
    suggested = float(message.split("use cell_size >= ")[1].split(",")[0])
    # The suggested size really fits.
    columns, _, total = pipeline.estimate_memory(
        huge, QUAD_TRIS, huge.min(0), huge.max(0), suggested
    )
    assert total <= 2 * 1024**3


def test_degenerate_triangles_are_simply_not_walkable():
    verts = np.vstack([QUAD, [[1, 1, 1], [2, 2, 1], [3, 3, 1]]]).astype(np.float32)
    tris = np.vstack([QUAD_TRIS, [[4, 5, 6]]])
    result = pipeline.bake(verts, tris, stop_after="heightfield")
    assert result.tri_areas.tolist() == [63, 63, 0]


def test_flat_geometry_without_extent():
    with pytest.raises(VoxNavError, match="same point"):
        pipeline.bake(np.ones((3, 3), np.float32), [[0, 1, 2]])


def test_obj_reader_errors(tmp_path):
    with pytest.raises(VoxNavError, match="cannot read OBJ"):
        read_obj(tmp_path / "missing.obj")
    bad = tmp_path / "bad.obj"
    bad.write_text("v 0 0 0\nv 1 0 0\nf 1 2 5\n")
    with pytest.raises(VoxNavError, match="bad.obj:3"):
        read_obj(bad)
    # Indices beyond int64 (NumPy's parse saturates): no made-up vertex number.
    for index in ("99999999999999999999", "-99999999999999999999"):
        bad.write_text(f"v 0 0 0\nv 10 0 0\nv 0 0 10\nf {index} 2 3\n")
        with pytest.raises(VoxNavError, match="beyond the 64-bit range") as info:
            read_obj(bad)
        assert "9223372036854775807" not in str(info.value)


def test_cli_reports_errors_and_exits_non_zero(tmp_path, capsys):
    assert main(["dump", str(tmp_path / "nope.obj"), "--out", str(tmp_path / "x.npz")]) == 1
    assert "cannot read OBJ" in capsys.readouterr().err


def test_voxel_grid_round_trip_and_queries():
    result = pipeline.bake(QUAD, QUAD_TRIS, NavConfig(cell_size=1.0, cell_height=0.5),
                           stop_after="heightfield")  # fmt: skip
    grid = VoxelGrid.from_heightfield(result.heightfield)
    back = grid.to_heightfield()
    assert np.array_equal(back.col_start, result.heightfield.col_start)
    assert np.array_equal(back.smax, result.heightfield.smax)
    inside = grid.occupied([[0.5, 0.5, 0.1], [0.5, 0.5, 3.0], [-1, 0, 0], [np.nan, 0, 0]])
    assert inside.tolist() == [True, False, False, False]


def test_bake_command_writes_navmesh_files(tmp_path):
    from .refdata import mesh_path

    out, js = tmp_path / "nav.obj", tmp_path / "nav.json"
    assert main(["bake", str(mesh_path("nav_test")), "--out", str(out), "--json", str(js)]) == 0
    text = out.read_text()
    assert text.count("\nf ") >= 155 and js.stat().st_size > 1000
    # Blender's frame by default: the navmesh's Y-up OBJ overlays the input OBJ (same extent).
    obj_v = np.array([[float(c) for c in line.split()[1:4]] for line in text.splitlines()
                      if line.startswith("v ")])  # fmt: skip
    src, _ = read_obj(mesh_path("nav_test"), recast_frame=True)  # (x, z, y) of the file
    src_y_up = src[:, [0, 2, 1]]
    assert np.all(obj_v.min(0) >= src_y_up.min(0) - 0.5)
    assert np.all(obj_v.max(0) <= src_y_up.max(0) + 2.5)


_FLOOR = (
    np.array([[0, 0, 0], [10, 0, 0], [10, 10, 0], [0, 10, 0]], np.float32),
    np.array([[0, 1, 2], [0, 2, 3]], np.int32),
)


@pytest.mark.parametrize(
    ("volume", "message"),
    [
        (pipeline.AreaVolume("convex", ((1, 1), (5, 1), (3, 5)), 5, zmin=np.nan, zmax=10),
         "must be finite"),
        (pipeline.AreaVolume("box", ((1, 1, -1, 0), (5, 5, 1, 0)), 5), "needs two points"),
        (pipeline.AreaVolume("box", ((-1e39, -1e39, -1), (1e39, 1e39, 1)), 5), "within"),
        (pipeline.AreaVolume("cylinder", ((1, 1, 0),), 5, radius=2e38, height=1), "within"),
        (pipeline.AreaVolume("box", ((1, 1, -1), (5, 5, 1)), 5.7), "whole number"),
    ],
)  # fmt: skip
def test_bad_area_volumes_are_refused_before_baking(volume, message):
    # Each of these reached the marking and failed there with a raw ValueError or
    # OverflowError (or, for the area id, was truncated to 5).
    with pytest.raises(VoxNavError, match=message):
        pipeline.bake(*_FLOOR, NavConfig(), volumes=(volume,))


def test_area_marking_of_a_shape_larger_than_float32_covers_every_span():
    # Straight calls (no validation): a cylinder of radius 2e38 marks what one of radius
    # 1e5 does (every walkable span), where the float32 cell range overflowed to infinity.
    from core import area

    chf = pipeline.bake(*_FLOOR, NavConfig(), stop_after="navmesh").compact
    wide = area.mark_cylinder_area(chf, (5, 5, -1), 1e5, 5, 7)
    huge = area.mark_cylinder_area(chf, (5, 5, -1), 2e38, 5, 7)
    assert (wide == 7).any() and np.array_equal(huge, wide)
    with pytest.raises(VoxNavError, match="three numbers"):
        area.mark_box_area(chf, (1, 1, -1, 0), (5, 5, 1, 0), 7)


def test_obstacles_far_beyond_any_grid_are_refused():
    from core import obstacles

    with pytest.raises(VoxNavError, match="within"):
        obstacles.oriented_box((0, 0, 0), (2e38, 2e38, 2e38), 0.3)
    with pytest.raises(VoxNavError, match="finite"):
        obstacles.cylinder((0, 0, np.nan), 1.0, 2.0)
