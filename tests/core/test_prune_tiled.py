"""Island pruning of tiled bakes (core.prune.prune_tiled): the flood over the multi-tile
navmesh against a literal breadth-first flood over its link lists, across tile borders; both
modes; the pruned tiles' Detour data; the CLI."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from core import tiles
from core.__main__ import main
from core.nav.binio import read_navmesh_set
from core.objio import read_obj
from core.prune import DISABLED_FLAG, prune_tiled

from .refdata import mesh_path
from .test_prune import DUNGEON_GROUND

TILE = 48


def _bake():
    verts, tris = read_obj(mesh_path("dungeon"))
    return tiles.bake_tiled(verts, tris, tile_size=TILE, workers=1)


@pytest.fixture(scope="module")
def dungeon_tiled():
    return _bake()


def _slow_flood(nav, seed: int) -> set[int]:
    """Breadth-first over `NavMesh.links_of`, one polygon at a time (the oracle)."""
    seen = {seed}
    queue = deque([seed])
    while queue:
        ref = queue.popleft()
        for k in nav.links_of(ref):
            target = int(nav.link_ref[k])
            if target >= 0 and target not in seen:
                seen.add(target)
                queue.append(target)
    return seen


def test_tiled_flood_matches_slow_flood_across_tiles(dungeon_tiled):
    bake = _bake()
    nav = bake.navmesh()
    report = prune_tiled(bake, [DUNGEON_GROUND], mode="disable")
    first = np.concatenate([[0], np.cumsum([t.npolys for t in dungeon_tiled.tiles])])
    seed_row = report.seed_polys[0]
    assert seed_row >= 0
    seed_tile = int(np.searchsorted(first, seed_row, side="right") - 1)
    seed_ref = nav.ref_of(
        dungeon_tiled.tiles[seed_tile].tx, dungeon_tiled.tiles[seed_tile].ty,
        seed_row - int(first[seed_tile]),
    )  # fmt: skip
    expected = _slow_flood(nav, seed_ref)
    rows = {int(first[nav.poly_tile[r]] + nav.poly_index[r]) for r in expected}
    assert set(np.nonzero(report.reached)[0].tolist()) == rows
    # The flood crossed tile borders: the reached polygons lie in several tiles.
    assert len({int(nav.poly_tile[r]) for r in expected}) > 1
    assert 0 < report.polys_cut < report.polys_kept + report.polys_cut


def test_remove_mode_keeps_exactly_the_reached_polygons(dungeon_tiled):
    bake = _bake()
    before = bake.npolys
    report = prune_tiled(bake, [DUNGEON_GROUND], mode="remove")
    assert bake.npolys == report.polys_kept == before - report.polys_cut
    assert report.area_cut > 0
    nav = bake.navmesh()
    assert nav.poly_count == report.polys_kept
    seed = int(report.seed_polys[0])
    # Every polygon left is reachable from the point (a flood on the pruned navmesh).
    from core.nav.query import NavMeshQuery

    ref = int(NavMeshQuery(nav).find_nearest_poly(np.float32(DUNGEON_GROUND)).ref)
    assert seed >= 0 and ref >= 0
    assert len(_slow_flood(nav, ref)) == nav.poly_count
    for tile in bake.tiles:  # each tile's data was made again from its pruned meshes
        assert tile.navdata.npolys == tile.polymesh.npolys == tile.detail.meshes.shape[0]


def test_disable_mode_keeps_polygons_and_flags_the_cut_ones(dungeon_tiled):
    bake = _bake()
    before = [t.npolys for t in bake.tiles]
    report = prune_tiled(bake, [DUNGEON_GROUND], mode="disable")
    assert [t.npolys for t in bake.tiles] == before
    flags = np.concatenate([t.polymesh.flags for t in bake.tiles])
    areas = np.concatenate([t.polymesh.areas for t in bake.tiles])
    cut = ~report.reached
    assert np.all(flags[cut] & DISABLED_FLAG) and np.all(areas[cut] == 0)
    assert not np.any(flags[~cut] & DISABLED_FLAG)


def test_points_off_the_navmesh_prune_nothing(dungeon_tiled):
    from core.context import BuildContext

    bake = _bake()
    ctx = BuildContext()
    report = prune_tiled(bake, [(1e4, 1e4, 1e4)], ctx=ctx)
    assert report.polys_cut == 0 and bake.npolys == dungeon_tiled.npolys
    assert any("nothing was pruned" in w for w in ctx.warnings)
    with pytest.raises(ValueError, match="finite"):
        prune_tiled(bake, [(np.nan, 0, 0)])
    with pytest.raises(ValueError, match="prune mode"):
        prune_tiled(bake, [DUNGEON_GROUND], mode="cut")


def test_cli_tiled_bake_prunes(tmp_path, capsys):
    out = tmp_path / "pruned.bin"
    full = tmp_path / "full.bin"
    args = ["bake", str(mesh_path("dungeon")), "--tile-size", str(TILE), "--workers", "1"]
    assert main([*args, "--out", str(full)]) == 0
    point = [f"{v}" for v in DUNGEON_GROUND]
    assert main([*args, "--out", str(out), "--reachable-from", *point]) == 0
    text = capsys.readouterr().out
    assert "island pruning removed" in text
    pruned, whole = read_navmesh_set(out), read_navmesh_set(full)
    n_pruned = sum(t.npolys for t in pruned.tiles)
    n_whole = sum(t.npolys for t in whole.tiles)
    assert 0 < n_pruned < n_whole
