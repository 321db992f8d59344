"""Island pruning (core.prune): the flood against a slow literal flood, remove and disable modes,
mesh consistency after removal, bad points, and the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from core import pipeline
from core.__main__ import main
from core.errors import VoxNavError
from core.export import read_navmesh_json
from core.objio import read_obj
from core.polymesh import MESH_NULL_IDX
from core.prune import DISABLED_FLAG, flood_polys, prune_islands, remove_polys

from .oracle import flood_polys_slow
from .refdata import mesh_path

#: A point on dungeon's ground floor (Z-up, the OBJ read as Blender imports it). [Units: wu]
DUNGEON_GROUND = (-12.055, 0.6187, 0.4773)


@pytest.fixture(scope="module")
def dungeon_bake():
    verts, tris = read_obj(mesh_path("dungeon"))
    return pipeline.bake(verts, tris)


def _loops(pmesh):
    """Each polygon as a tuple of its world vertex positions (rounded), in polygon order."""
    world = pmesh.world_verts()
    nvp = pmesh.nvp
    return [
        tuple(tuple(np.round(world[v], 4)) for v in row[:nvp] if v != MESH_NULL_IDX)
        for row in pmesh.polys
    ]


def _check_links_symmetric(pmesh):
    nvp = pmesh.nvp
    for p, row in enumerate(pmesh.polys):
        for k in range(nvp):
            n = int(row[nvp + k])
            if n == MESH_NULL_IDX or n & 0x8000:
                continue
            assert n < pmesh.npolys
            assert p in [int(x) for x in pmesh.polys[n, nvp:]], (p, n)


def test_dungeon_ground_floor_prunes_exactly_the_unflooded_polygons(dungeon_bake):
    pm, detail = dungeon_bake.polymesh, dungeon_bake.detail
    out, out_detail, report = prune_islands(pm, detail, [DUNGEON_GROUND], mode="remove")
    seed = report.seed_polys[0]
    assert seed >= 0
    expected = flood_polys_slow(pm.polys, pm.nvp, [seed])
    assert set(np.nonzero(report.reached)[0].tolist()) == expected
    assert 0 < report.polys_cut < pm.npolys  # the dungeon has islands, and a ground floor
    assert report.polys_kept == len(expected) == out.npolys
    assert report.polys_cut == pm.npolys - len(expected)
    # The kept polygons are exactly the reached ones, same geometry, same order.
    before = _loops(pm)
    assert _loops(out) == [before[i] for i in sorted(expected)]
    _check_links_symmetric(out)
    # No vertex is left unused.
    used = np.unique(out.polys[:, : out.nvp][out.polys[:, : out.nvp] != MESH_NULL_IDX])
    assert used.tolist() == list(range(out.nverts))
    # Cut area = sum of the cut polygons' shoelace areas (a literal loop).
    world = pm.world_verts().astype(np.float64)
    area = 0.0
    for i in set(range(pm.npolys)) - expected:
        ids = [v for v in pm.polys[i, : pm.nvp] if v != MESH_NULL_IDX]
        twice = 0.0
        for a, b in zip(ids, ids[1:] + ids[:1], strict=True):
            twice += world[a, 0] * world[b, 1] - world[b, 0] * world[a, 1]
        area += abs(twice) / 2
    assert report.area_cut > 0
    assert report.area_cut == pytest.approx(area, rel=1e-9)


def test_flood_matches_slow_flood_from_every_polygon(dungeon_bake):
    pm = dungeon_bake.polymesh
    for seed in range(pm.npolys):
        fast = set(np.nonzero(flood_polys(pm, [seed]))[0].tolist())
        assert fast == flood_polys_slow(pm.polys, pm.nvp, [seed])


def test_removed_detail_mesh_is_consistent(dungeon_bake):
    pm, detail = dungeon_bake.polymesh, dungeon_bake.detail
    out, out_detail, report = prune_islands(pm, detail, [DUNGEON_GROUND])
    kept = np.nonzero(report.reached)[0]
    assert out_detail.nmeshes == out.npolys
    m = out_detail.meshes.astype(np.int64)
    assert m[0, 0] == 0 and m[0, 2] == 0
    assert np.array_equal(m[1:, 0], np.cumsum(m[:-1, 1]))
    assert np.array_equal(m[1:, 2], np.cumsum(m[:-1, 3]))
    assert m[-1, 0] + m[-1, 1] == out_detail.nverts
    assert m[-1, 2] + m[-1, 3] == out_detail.ntris
    old = detail.meshes.astype(np.int64)
    for new_i, old_i in enumerate(kept):
        vb, vn, tb, tn = m[new_i]
        ovb, ovn, otb, otn = old[old_i]
        assert np.array_equal(out_detail.verts[vb : vb + vn], detail.verts[ovb : ovb + ovn])
        assert np.array_equal(out_detail.tris[tb : tb + tn], detail.tris[otb : otb + otn])


def test_disable_mode_keeps_every_polygon(dungeon_bake):
    pm, detail = dungeon_bake.polymesh, dungeon_bake.detail
    out, out_detail, report = prune_islands(pm, detail, [DUNGEON_GROUND], mode="disable")
    cut = ~report.reached
    assert cut.any()
    assert out.npolys == pm.npolys and out_detail is detail
    assert np.array_equal(out.polys, pm.polys)
    assert (out.areas[cut] == 0).all() and (out.flags[cut] & DISABLED_FLAG).all()
    assert np.array_equal(out.areas[~cut], pm.areas[~cut])
    assert not (out.flags[~cut] & DISABLED_FLAG).any()
    assert (pm.flags & DISABLED_FLAG == 0).all()  # the input is not modified


def test_remove_polys_drops_links_to_removed_polygons(dungeon_bake):
    pm = dungeon_bake.polymesh
    keep = np.ones(pm.npolys, dtype=bool)
    keep[::3] = False  # not closed under links: links to dropped polygons must vanish
    out, _ = remove_polys(pm, None, keep)
    assert out.npolys == int(keep.sum())
    _check_links_symmetric(out)


def test_no_points_and_far_points_prune_nothing(dungeon_bake):
    from core.context import BuildContext

    pm, detail = dungeon_bake.polymesh, dungeon_bake.detail
    out, _, report = prune_islands(pm, detail, [])
    assert out is pm and report.polys_cut == 0
    ctx = BuildContext()
    out, _, report = prune_islands(pm, detail, [(1000.0, 0.0, 0.0)], ctx=ctx)
    assert out is pm and report.polys_cut == 0 and report.seed_polys == [-1]
    assert any("(1000, 0, 0)" in w for w in ctx.warnings)
    # One good point and one bad: the bad one is named, the good one prunes.
    ctx = BuildContext()
    _, _, report = prune_islands(pm, detail, [(1000.0, 0.0, 0.0), DUNGEON_GROUND], ctx=ctx)
    assert report.polys_cut > 0 and any("(1000, 0, 0)" in w for w in ctx.warnings)
    with pytest.raises(VoxNavError, match="prune mode"):
        prune_islands(pm, detail, [DUNGEON_GROUND], mode="delete")


def test_bake_option_equals_post_bake_function(dungeon_bake):
    verts, tris = read_obj(mesh_path("dungeon"))
    pruned = pipeline.bake(verts, tris, reachable_from=[DUNGEON_GROUND])
    assert pruned.prune is not None and pruned.counts["polys_pruned"] == pruned.prune.polys_cut
    _, _, report = prune_islands(dungeon_bake.polymesh, dungeon_bake.detail, [DUNGEON_GROUND])
    assert pruned.polymesh.npolys == report.polys_kept
    assert np.array_equal(pruned.prune.reached, report.reached)


def test_cli_reachable_from(tmp_path, capsys):
    mesh = str(mesh_path("dungeon"))
    out = tmp_path / "pruned.json"
    point = [str(v) for v in DUNGEON_GROUND]
    assert main(["bake", mesh, "--out", str(out), "--reachable-from", *point]) == 0
    assert "island pruning removed" in capsys.readouterr().out
    pruned = read_navmesh_json(out)
    full = tmp_path / "full.json"
    assert main(["bake", mesh, "--out", str(full)]) == 0
    dis = tmp_path / "disabled.json"
    args = ["bake", mesh, "--out", str(dis), "--reachable-from", *point, "--prune-mode", "disable"]
    assert main(args) == 0
    assert len(pruned[0].polys) < len(read_navmesh_json(full)[0].polys)
    assert len(read_navmesh_json(dis)[0].polys) == len(read_navmesh_json(full)[0].polys)
    # A far point: a warning naming it, nothing pruned, still exit 0.
    assert main(["bake", mesh, "--out", str(out), "--reachable-from", "1000", "0", "0"]) == 0
    assert "(1000, 0, 0)" in capsys.readouterr().err
    # Bad flags: exit 2.
    assert main(["bake", mesh, "--out", str(out), "--reachable-from", "1", "2"]) == 2
    assert main(["bake", mesh, "--out", str(out), "--prune-mode", "drop"]) == 2
    # Tiled bakes prune too (tests/core/test_prune_tiled.py).
    tiled = ["bake", mesh, "--out", str(tmp_path / "t.bin"), "--tile-size", "32"]
    assert main([*tiled, "--reachable-from", *point]) == 0


def test_detour_bin_gets_the_pruned_mesh(dungeon_bake, tmp_path):
    from core.export import write_detour_bin
    from core.nav.binio import read_navmesh_set
    from core.nav.navmesh import NavMesh
    from core.nav.query import NavMeshQuery

    pm, detail = dungeon_bake.polymesh, dungeon_bake.detail
    agent = {"agent_height": 2.0, "agent_radius": 0.6, "agent_max_climb": 0.9}
    removed, removed_detail, report = prune_islands(pm, detail, [DUNGEON_GROUND])
    write_detour_bin(tmp_path / "removed.bin", removed, removed_detail, frame="recast", **agent)
    tile = read_navmesh_set(tmp_path / "removed.bin").tiles[0]
    assert tile.npolys == report.polys_kept
    # Detour loads it and finds the ground floor on it.
    query = NavMeshQuery(NavMesh.from_data(tile))
    nearest = query.find_nearest_poly(DUNGEON_GROUND)
    assert nearest.ref >= 0
    disabled, disabled_detail, _ = prune_islands(pm, detail, [DUNGEON_GROUND], mode="disable")
    write_detour_bin(tmp_path / "disabled.bin", disabled, disabled_detail, frame="recast", **agent)
    tile = read_navmesh_set(tmp_path / "disabled.bin").tiles[0]
    assert tile.npolys == pm.npolys
    cut = ~report.reached
    assert (tile.poly_flags[cut] == 0).all() and (tile.poly_flags[~cut] != 0).all()


def test_cli_prunes_every_agent(tmp_path, capsys):
    mesh = str(mesh_path("dungeon"))
    point = [str(v) for v in DUNGEON_GROUND]
    out = tmp_path / "nav.json"
    agents = ["--agent", "small:radius=0.3", "--agent", "large:radius=0.9"]
    assert main(["bake", mesh, "--out", str(out), *agents, "--reachable-from", *point]) == 0
    printed = capsys.readouterr().out
    for name in ("small", "large"):
        assert f"agent {name}: island pruning removed" in printed
        assert (tmp_path / f"nav_{name}.json").exists()


@pytest.mark.parametrize(
    "points, words",
    [
        # (x, y, z, w) rows were reshaped into four scrambled seeds.
        (np.c_[np.zeros((3, 3)), np.ones(3)], r"an \(n, 3\) array; got shape \(3, 4\)"),
        (np.zeros(2), r"got shape \(2,\)"),
        ("0,0,0", "must be numbers"),  # a raw ValueError, after every stage had run
    ],
)
def test_reachable_from_points_of_the_wrong_shape_are_refused_before_baking(
    points, words, monkeypatch
):
    stages = []
    monkeypatch.setattr(pipeline, "_heightfield_stages", lambda *a: stages.append(1))
    verts = np.array([[0, 0, 0], [10, 0, 0], [10, 10, 0], [0, 10, 0]], np.float32)
    tris = np.array([[0, 2, 1], [0, 3, 2]], np.int32)
    with pytest.raises(VoxNavError, match=words):
        pipeline.bake(verts, tris, reachable_from=points)
    assert stages == []


def test_many_points_off_the_navmesh_are_warned_about_in_a_few_lines(dungeon_bake):
    """20,000 reachable-from points gave 16,168 warning lines, one per point off the navmesh
    (a helper); solo and tiled say the first five and count the rest."""
    from core import tiles
    from core.context import BuildContext
    from core.prune import OFF_NAVMESH_NAMED, prune_tiled

    far = np.column_stack([np.arange(40, dtype=float) * 3 + 1000, np.zeros(40), np.zeros(40)])
    points = np.vstack([DUNGEON_GROUND, far])
    ctx = BuildContext()
    prune_islands(dungeon_bake.polymesh, dungeon_bake.detail, points, ctx=ctx)
    verts, tris = read_obj(mesh_path("dungeon"))
    tiled_ctx = BuildContext()
    prune_tiled(tiles.bake_tiled(verts, tris, None, 64, workers=1), points, ctx=tiled_ctx)
    for warnings in (ctx.warnings, tiled_ctx.warnings):
        assert len(warnings) == OFF_NAVMESH_NAMED + 1, warnings
        assert warnings[-1].startswith(f"{40 - OFF_NAVMESH_NAMED} more reachable-from points")
