"""The pipeline's overlay: what the add-on draws as the navigation mesh."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from core import pipeline
from core.__main__ import main
from core.config import NavConfig
from core.errors import VoxNavError
from core.objio import read_obj

from . import oracle
from .refdata import mesh_path

# A 6 x 6 m floor with a 2 x 2 x 3 m block in the middle.
FLOOR = [[0, 0, 0], [6, 0, 0], [6, 6, 0], [0, 6, 0]]
BLOCK = [[2, 2, 0], [4, 2, 0], [4, 4, 0], [2, 4, 0], [2, 2, 3], [4, 2, 3], [4, 4, 3], [2, 4, 3]]
RAMP_TOP = float(np.tan(np.radians(20)) * 6)
# A 20 degree ramp beside the floor, rising along y from 0 to RAMP_TOP.
RAMP = [[6, 0, 0], [12, 0, 0], [12, 6, RAMP_TOP], [6, 6, RAMP_TOP]]


def scene():
    verts = np.array(FLOOR + BLOCK, np.float32)
    tris = [[0, 1, 2], [0, 2, 3]]
    quads = [(4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    for a, b, c, d in quads:
        tris += [[a + 4, b + 4, c + 4], [a + 4, c + 4, d + 4]]
    tris += [[12, 13, 14], [12, 14, 15]]
    return np.vstack([verts, np.array(RAMP, np.float32)]), np.array(tris, np.int32)


def test_overlay_follows_the_walkable_surface():
    verts, tris = scene()
    result = pipeline.bake(verts, tris, NavConfig(cell_size=0.2, cell_height=0.1))
    over_verts, sizes, face_verts, region, poly = result.overlay()
    assert sizes.shape == region.shape == poly.shape
    assert int(sizes.sum()) == face_verts.shape[0]
    assert int(sizes.shape[0]) == result.counts["detail_tris"]
    assert set(np.unique(region)) <= set(result.polymesh.regs.tolist())
    # Every face points up, and every vertex lies on the floor or the ramp, not under it.
    tri = over_verts[face_verts.reshape(-1, 3)]
    up = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])[:, 2]
    assert np.all(up > 0)
    on_ramp = over_verts[:, 0] > 6.2
    ramp_height = over_verts[on_ramp, 1] / 6 * RAMP_TOP
    assert np.all(np.abs(over_verts[on_ramp, 2] - ramp_height) < 0.25)
    assert np.all(np.abs(over_verts[~on_ramp, 2]) < 0.25)
    # Nothing inside the block's footprint (eroded by the agent radius).
    inside = (np.abs(over_verts[:, 0] - 3) < 1.0) & (np.abs(over_verts[:, 1] - 3) < 1.0)
    assert not inside.any()


def test_overlay_before_the_navmesh_is_span_tops():
    verts, tris = scene()
    result = pipeline.bake(verts, tris, NavConfig(cell_size=0.2, cell_height=0.1),
                           stop_after="heightfield")  # fmt: skip
    over_verts, sizes, face_verts, region, poly = result.overlay()
    assert np.all(sizes == 4) and sizes.shape[0] == result.counts["walkable_spans"]
    assert np.all(region == 0)


def test_area_volumes_paint_and_block():
    verts, tris = scene()
    config = NavConfig(cell_size=0.2, cell_height=0.1)
    plain = pipeline.bake(verts, tris, config)
    volumes = (
        pipeline.AreaVolume("box", ((0.0, 0.0, -1.0), (1.5, 6.0, 1.0)), area=5),
        pipeline.AreaVolume("cylinder", ((9.0, 3.0, -1.0),), area=0, radius=1.0, height=5.0),
    )
    painted = pipeline.bake(verts, tris, config, volumes=volumes)
    assert 5 in painted.polymesh.areas.tolist() and 5 not in plain.polymesh.areas.tolist()
    assert painted.counts["walkable_after_erode"] < plain.counts["walkable_after_erode"]
    with pytest.raises(VoxNavError, match="kind"):
        pipeline.bake(verts, tris, config, volumes=(pipeline.AreaVolume("sphere", (), 1),))


def random_scene(rng):
    """Floors, boxes and ramps at random heights: a small, messy level."""
    verts, tris = [], []

    def quad(a, b, c, d):
        base = len(verts)
        verts.extend([a, b, c, d])
        tris.extend([[base, base + 1, base + 2], [base, base + 2, base + 3]])

    quad((0, 0, 0), (20, 0, 0), (20, 20, 0), (0, 20, 0))
    for _ in range(6):
        x, y = rng.uniform(1, 16, 2)
        w, d = rng.uniform(1, 4, 2)
        h = rng.choice([0.3, 0.8, 2.5])
        quad((x, y, h), (x + w, y, h), (x + w, y + d, h), (x, y + d, h))
        for (ax, ay), (bx, by) in (((x, y), (x + w, y)), ((x + w, y), (x + w, y + d)),
                                   ((x + w, y + d), (x, y + d)), ((x, y + d), (x, y))):  # fmt: skip
            quad((ax, ay, 0), (bx, by, 0), (bx, by, h), (ax, ay, h))
    x = rng.uniform(2, 14)
    rise = rng.uniform(0.5, 3)
    quad((x, 0, 0), (x + 4, 0, 0), (x + 4, 6, rise), (x, 6, rise))
    return np.array(verts, np.float32), np.array(tris, np.int32)


@pytest.mark.parametrize("seed", range(4))
def test_navmesh_invariants_on_random_scenes(seed):
    verts, tris = random_scene(np.random.default_rng(seed))
    result = pipeline.bake(verts, tris, NavConfig(cell_size=0.25, cell_height=0.1))
    pmesh, chf = result.polymesh, result.compact
    nvp = pmesh.nvp
    ids = pmesh.polys[:, :nvp].astype(np.int64)
    neighbours = pmesh.polys[:, nvp:].astype(np.int64)
    counts = (ids != 0xFFFF).sum(axis=1)
    v = pmesh.verts.astype(np.int64)
    for p in range(pmesh.npolys):
        ring = v[ids[p, : counts[p]]][:, [0, 2]]
        edges = np.roll(ring, -1, axis=0) - ring
        turn = (
            edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1]
            - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
        )
        assert np.all(turn <= 0) or np.all(turn >= 0), f"polygon {p} is not convex"
        for e in range(counts[p]):
            q = neighbours[p, e]
            if q != 0xFFFF and not q & 0x8000:
                assert p in neighbours[q, : counts[q]].tolist(), "neighbour links not symmetric"
    # Every polygon vertex stands on a walkable span of its column (within climb), and no
    # polygon vertex is over a column without one.
    walk = chf.area != 0
    col = chf.span_x.astype(np.int64) + chf.span_y.astype(np.int64) * chf.width
    for x, h, y in v:
        near = []
        for dx in (-1, 0):
            for dy in (-1, 0):
                c = (x + dx) + (y + dy) * chf.width
                if 0 <= x + dx < chf.width and 0 <= y + dy < chf.height:
                    near.extend(chf.y[(col == c) & walk].astype(np.int64).tolist())
        assert near, f"vertex {(x, y)} has no walkable span under it"
        assert min(abs(f - h) for f in near) <= chf.walkable_climb + 1
    # No polygon over a column without a walkable span: its centroid's column has one.
    for p in range(pmesh.npolys):
        ring = v[ids[p, : counts[p]]]
        cx, cy = int(ring[:, 0].mean()), int(ring[:, 2].mean())
        assert np.any(walk & (col == cx + cy * chf.width)), f"polygon {p} over a null column"


# ------------------------------------------------------------------------------------------
# Every partitioning through every core entry point (issue 10: monotone and layers crashed)


@functools.cache
def _dungeon_bake(partition: str) -> pipeline.BakeResult:
    verts, tris = read_obj(mesh_path("dungeon"), recast_frame=True)
    return pipeline.bake(verts, tris, NavConfig(partition=partition))


@pytest.mark.parametrize("partition", ["monotone", "layers"])
def test_bake_with_each_sweep_partitioning_matches_the_literal_recast_port(partition):
    result = _dungeon_bake(partition)
    assert not result.empty and result.counts["polys"] > 0 and result.counts["detail_tris"] > 0
    assert result.warnings == []
    chf = result.compact
    derived = result.config.derived()
    if partition == "monotone":
        want, want_max, _ = oracle.build_regions_monotone(
            chf, 0, derived.min_region_area, derived.merge_region_area
        )
    else:
        want, want_max = oracle.build_layer_regions(chf, 0, derived.min_region_area)
    np.testing.assert_array_equal(chf.reg, np.array(want, dtype=np.uint16))
    assert chf.max_regions == want_max
    # Every surviving region becomes polygons.
    live = np.unique(chf.reg[chf.reg != 0])
    assert set(result.polymesh.regs.tolist()) == set(live.tolist())


@pytest.mark.parametrize("partition", ["watershed", "monotone", "layers"])
def test_cli_bake_and_dump_with_each_partitioning(partition, tmp_path, capsys):
    obj = mesh_path("dungeon")
    out = tmp_path / "nav.obj"
    assert main(["bake", str(obj), "--partition", partition, "--out", str(out)]) == 0
    faces = [line for line in out.read_text().splitlines() if line.startswith("f ")]
    assert len(faces) > 0
    npz = tmp_path / "dump.npz"
    argv = ["dump", str(obj), "--recast-frame", "--partition", partition, "--out", str(npz)]
    assert main(argv) == 0
    capsys.readouterr()
    with np.load(npz) as data:
        assert int(data["count_polys"]) > 0 and int(data["count_detail_tris"]) > 0
        if partition != "watershed":
            result = _dungeon_bake(partition)
            np.testing.assert_array_equal(data["chf_reg"], result.compact.reg)
            np.testing.assert_array_equal(data["pmesh_polys"], result.polymesh.polys)
