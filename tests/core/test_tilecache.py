"""Temporary obstacles on a tiled navmesh (core/tilecache.py): only touched tiles rebuild, and
the result equals a full tiled bake with the obstacles marked, tile for tile."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from core import obstacles as ob
from core import tilecache, tiles
from core.config import NavConfig
from core.errors import VoxNavError
from core.objio import read_obj
from core.tilecache import TileCache

from ..conftest import require_shared

TILE = 32


@pytest.fixture(scope="module")
def scene():
    """A 3 x 3-tile window of the dungeon (tiles full of polygons), tile size 32."""
    verts, tris = read_obj(require_shared("meshes/dungeon.obj"))
    lo, hi = verts.min(axis=0), verts.max(axis=0)
    tile_wu = TILE * 0.3
    x0, y0 = float(lo[0]) + 1 * tile_wu, float(lo[1]) + 7 * tile_wu
    config = NavConfig(
        bounds_min=(x0, y0, float(lo[2])),
        bounds_max=(x0 + 3 * tile_wu - 0.5, y0 + 3 * tile_wu - 0.5, float(hi[2])),
    )
    return verts, tris, config


@pytest.fixture(scope="module")
def built(scene):
    verts, tris, config = scene
    return TileCache.build(verts, tris, config, TILE, workers=1)


@pytest.fixture()
def cache(built):
    return copy.deepcopy(built)


def _same(a, b) -> bool:
    """Dataclasses equal field by field (arrays exactly; timings and warnings ignored)."""
    if a is None or b is None:
        return a is b
    for f in dataclasses.fields(a):
        if f.name in ("timings", "warnings"):
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            if not (x.dtype == y.dtype and np.array_equal(x, y)):
                return False
        elif dataclasses.is_dataclass(x):
            if not _same(x, y):
                return False
        elif x != y:
            return False
    return True


def _assert_equals_full_bake(scene, cache: TileCache):
    verts, tris, config = scene
    full = tiles.bake_tiled(verts, tris, config, TILE, workers=1,
                            volumes=cache.obstacles.volumes())  # fmt: skip
    expect = {(t.tx, t.ty): t for t in full.tiles}
    assert set(cache.tiles) == set(expect)
    for key, tile in expect.items():
        got = cache.tiles[key]
        assert _same(got.polymesh, tile.polymesh), key
        assert _same(got.detail, tile.detail), key
        assert _same(got.navdata, tile.navdata), key
    assert cache.navmesh.poly_count == full.npolys
    # Relinked like a fresh navmesh: the same links per polygon (a relinked neighbour's new
    # links come first, as Detour prepends them, so each polygon's links compare as a set).
    fresh = _links(full.navmesh())
    got = _links(cache.navmesh)
    assert got.keys() == fresh.keys()
    assert all(sorted(got[p]) == sorted(fresh[p]) for p in fresh)
    assert sorted(map(tuple, cache.navmesh.tile_xy[:, :2].tolist())) == sorted(expect)


def _expected_tiles(cache: TileCache, shapes) -> set[tuple[int, int]]:
    """Brute force: tiles with geometry whose heightfield bounds meet a shape's bounds widened
    by one cell."""
    out = set()
    cs = float(cache.grid.cs)
    for tx, ty in cache.grid.tiles():
        lo, hi = cache.grid.build_bounds(tx, ty)
        for shape in shapes:
            x0, y0, x1, y1 = shape.box_xy()
            if lo[0] <= x1 + cs and hi[0] >= x0 - cs and lo[1] <= y1 + cs and hi[1] >= y0 - cs:
                if (tx, ty) in cache.compact:
                    out.add((tx, ty))
    return out


def _floor_point(cache: TileCache, tile: tuple[int, int]) -> np.ndarray:
    """A point on the walkable surface of a tile: its largest polygon's centre, Z-up."""
    nm = cache.navmesh
    t = nm.tile_at(*tile)
    lo, hi = nm.tile_poly_base[t], nm.tile_poly_base[t + 1]
    pos = nm.poly_pos[lo:hi].astype(np.float64)
    n = nm.poly_vert_count[lo:hi].astype(np.int64)
    big = int(np.argmax(n))
    centre = pos[big, : n[big]].mean(axis=0)
    return np.array([centre[0], centre[2], centre[1]])


def test_add_move_remove_rebuilds_only_touched_tiles_and_equals_a_full_bake(scene, cache):
    base = {k: t for k, t in cache.tiles.items()}
    assert len(base) >= 6
    spot = _floor_point(cache, (1, 1))
    post = ob.cylinder(spot - [0, 0, 0.5], 1.2, 2.5)
    wall = ob.oriented_box(_floor_point(cache, (0, 2)) + [0, 0, 0.5], (2.0, 0.5, 1.5), 0.6)
    spot = _floor_point(cache, (2, 2))
    crate = ob.box(spot - [1.0, 0.8, 0.5], spot + [1.0, 0.8, 1.5])
    a = cache.add(post)
    b = cache.add(wall)
    c = cache.add(crate)
    expect = _expected_tiles(cache, [post, wall, crate])
    assert set(cache.dirty) == expect
    old_mesh, old_links = cache.navmesh, _links(cache.navmesh)
    report = cache.update()
    # A new navmesh; the old one (and queries on it) untouched.
    assert cache.navmesh is not old_mesh and _links(old_mesh) == old_links
    assert set(report.rebuilt) == expect and len(report.rebuilt) == len(expect)
    assert cache.rebuild_count == len(expect)
    assert not cache.dirty
    # The obstacles really changed the mesh of the tiles they stand on.
    changed = {
        k
        for k in base
        if k not in cache.tiles or not _same(base[k].polymesh, cache.tiles[k].polymesh)
    }
    assert changed and changed <= expect
    _assert_equals_full_bake(scene, cache)

    # Move the post two tiles over: its old and new tiles rebuild, nothing else.
    moved = post.moved_to(_floor_point(cache, (2, 0)) - [0, 0, 0.5])
    cache.move(a, moved.position)
    expect = _expected_tiles(cache, [post, moved])
    count = cache.rebuild_count
    report = cache.update()
    assert set(report.rebuilt) == expect and cache.rebuild_count == count + len(expect)
    _assert_equals_full_bake(scene, cache)

    # Remove them all: back to the obstacle-free bake, tile for tile.
    cache.remove(b)
    cache.remove(a)
    cache.remove(c)
    report = cache.update()
    assert set(report.rebuilt) == _expected_tiles(cache, [moved, wall, crate])
    # Obstacle-free again: every tile is its first bake's result, no stage re-ran.
    assert report.reused == report.rebuilt
    assert set(cache.tiles) == set(base)
    for key, tile in base.items():
        assert _same(cache.tiles[key].polymesh, tile.polymesh), key
        assert _same(cache.tiles[key].detail, tile.detail), key


def test_bad_input_is_a_clear_message_and_keeps_the_navmesh(cache, monkeypatch):
    with pytest.raises(VoxNavError, match="outside every tile.*place it over the baked world"):
        cache.add(ob.box((1000, 1000, 0), (1001, 1001, 1)))
    assert len(cache.obstacles) == 0 and not cache.dirty
    with pytest.raises(VoxNavError, match="cannot remove obstacle 5: no such obstacle"):
        cache.remove(5)
    oid = cache.add(ob.cylinder(_floor_point(cache, (1, 1)) - [0, 0, 0.5], 1.0, 2.0))
    with pytest.raises(VoxNavError, match="outside every tile"):
        cache.move(oid, (-5000.0, 0.0, 0.0))
    dirty = cache.dirty
    polys = cache.navmesh.poly_count
    tiles_before = dict(cache.tiles)

    def broken(*args, **kwargs):
        raise VoxNavError("disk on fire")

    monkeypatch.setattr(tilecache, "bake_tile_from_compact", broken)
    with pytest.raises(VoxNavError, match="disk on fire"):
        cache.update()
    assert cache.navmesh.poly_count == polys and cache.tiles == tiles_before
    assert cache.dirty == dirty
    monkeypatch.undo()
    assert cache.update().rebuilt == dirty


def test_misused_calls_are_clear_messages(cache):
    with pytest.raises(VoxNavError, match="obstacles are core.obstacles.Obstacle values.*str"):
        cache.add("crate")
    with pytest.raises(VoxNavError, match="cannot move obstacle 7: no such obstacle"):
        cache.move(7, (0.0, 0.0, 0.0))
    with pytest.raises(VoxNavError, match=r"tile \(99, 0\) is outside the 3 x 3 tile grid"):
        cache.rebuild_tile(99, 0)
    with pytest.raises(VoxNavError, match="a tile is two whole numbers"):
        cache.rebuild_tile(0.5, 0)  # None (no such tile) before
    with pytest.raises(VoxNavError, match="a box is four finite numbers"):
        cache.tiles_touched([0.0, 0.0])
    with pytest.raises(VoxNavError, match="a box is four finite numbers"):
        cache.tiles_touched([np.nan, 0.0, 1.0, 1.0])  # touched no tile, silently
    with pytest.raises(VoxNavError, match="an oriented_box obstacle needs a size > 0"):
        cache.add(ob.oriented_box((0.0, 0.0, 0.0), (1.0, -1.0, 1.0), 0.0))
    assert len(cache.obstacles) == 0 and not cache.dirty


def _links(nm):
    """Per polygon (tile x, tile y, index): its links as (target tile x, y, index, edge,
    side, bmin, bmax), in order."""
    key = np.stack([nm.tile_xy[nm.poly_tile, 0], nm.tile_xy[nm.poly_tile, 1], nm.poly_index], 1)
    out = {}
    for p in range(nm.poly_count):
        rows = range(nm.link_start[p], nm.link_start[p + 1])
        out[tuple(key[p])] = [
            (
                *key[nm.link_ref[r]],
                nm.link_edge[r],
                nm.link_side[r],
                nm.link_bmin[r],
                nm.link_bmax[r],
            )  # fmt: skip
            for r in rows
        ]
    return out


def test_remove_tile_then_add_relinks_like_the_first_build(cache):
    nm = cache.navmesh
    before = _links(nm)
    key = (1, 1)
    data = nm.remove_tile(*key)
    assert nm.tile_at(*key) == -1
    gone = _links(nm)
    assert all(link[:2] != key for links in gone.values() for link in links)
    nm.add_tile(data)
    after = _links(nm)
    assert after.keys() == before.keys()
    # The same links; a neighbour's links into the re-added tile now come first (Detour
    # prepends new links), so compare each polygon's links as a set.
    for poly, links in before.items():
        assert sorted(after[poly]) == sorted(links), poly
    with pytest.raises(VoxNavError, match="no tile sits"):
        nm.remove_tile(99, 99)


def test_overlay_has_every_tiles_detail_triangles_and_follows_obstacles(cache):
    verts, sizes, face_verts, region, poly = cache.overlay()
    ntris = sum(int(t.detail.tris.shape[0]) for t in cache.tiles.values())
    assert sizes.shape[0] == ntris and (sizes == 3).all()
    assert face_verts.shape[0] == 3 * ntris and face_verts.max() < verts.shape[0]
    g = cache.grid
    lo = g.bmin[:2]
    hi = lo + float(g.tile_world_size) * np.array([g.tiles_w, g.tiles_h])
    assert (verts[:, :2] >= lo - 1e-3).all() and (verts[:, :2] <= hi + 1e-3).all()
    # Polygon ids are unique across tiles.
    assert np.unique(poly).shape[0] == sum(t.npolys for t in cache.tiles.values())
    cache.add(ob.cylinder(_floor_point(cache, (1, 1)) - [0, 0, 0.5], 1.2, 2.5))
    cache.update()
    assert cache.overlay()[1].shape[0] != ntris or not np.array_equal(cache.overlay()[0], verts)


def test_a_change_that_marks_no_new_span_reuses_the_current_tiles(scene, cache):
    spot = _floor_point(cache, (1, 1)) - [0, 0, 0.5]
    cache.add(ob.cylinder(spot, 1.2, 2.5))
    first = cache.update()
    assert first.rebuilt and len(first.reused) < len(first.rebuilt)
    mesh, tiles_now = cache.navmesh, dict(cache.tiles)
    # A second, smaller obstacle inside the first one marks nothing new: same tiles, same mesh.
    cache.add(ob.cylinder(spot, 0.6, 2.0))
    again = cache.update()
    assert again.rebuilt and again.reused == again.rebuilt
    assert cache.navmesh is mesh and cache.tiles == tiles_now
    _assert_equals_full_bake(scene, cache)
    # The shortcut off: every dirty tile re-runs the stages, and the result is the same.
    cache.reuse_equal_areas = False
    cache.add(ob.cylinder(spot, 0.5, 2.0))
    off = cache.update()
    assert off.rebuilt and not off.reused
    for key, tile in tiles_now.items():
        assert _same(cache.tiles[key].navdata, tile.navdata), key


def test_cache_keeps_the_bakes_auto_links_and_obstacles_block_them(tmp_path):
    """Auto Links in a tile cache: the links are those of a tiled bake; a box standing in the
    gap blocks the jumps whose arc it meets (gone from `links` and from the Detour tiles that
    hold their starts, even tiles the box does not touch); removing it brings them back; a
    saved cache keeps them."""
    from core.nav.query import NavMeshQuery

    from .linkscenes import ON_FLOOR_A, ON_FLOOR_B, gap_and_ledge_scene
    from .test_offmesh_links import STRAIGHT_OFFMESH, single_path

    verts, tris = gap_and_ledge_scene()
    config = NavConfig(auto_links=True)
    baked = tiles.bake_tiled(verts, tris, config, 32, workers=1)
    cache = TileCache.build(verts, tris, config, 32, workers=1)
    every = baked.navmesh_links()
    assert cache.auto_links is not None and len(cache.auto_links) == len(every) > 0
    np.testing.assert_array_equal(cache.links().start, every.start)

    def stored() -> int:
        return sum(int(data.off_mesh_count) for data in cache.navmesh.tiles if data is not None)

    assert stored() == len(every)
    jumps = cache.auto_links.bidirectional
    y = cache.auto_links.start[:, 1]
    # An obstacle that only repaints the floor (area 5) blocks nothing.
    paint = cache.add(ob.box((10.2, 3.0, -2.0), (11.3, 6.0, 3.0), area=5))
    cache.update()
    assert len(cache.links()) == len(every) == stored()
    cache.remove(paint)
    # A wall across the whole gap at y 3..6: jumps starting there are blocked, the rest stay.
    block = cache.add(ob.box((10.2, 3.0, -2.0), (11.3, 6.0, 3.0)))
    cache.update()
    expected = ~(jumps & (y > 3.0 - 0.6) & (y < 6.0 + 0.6))
    np.testing.assert_array_equal(cache._auto_active, expected)
    assert 0 < int(expected.sum()) < len(every)
    assert len(cache.links()) == int(expected.sum()) == stored()
    query = NavMeshQuery(cache.navmesh)
    _path, straight, _ = single_path(query, ON_FLOOR_A, ON_FLOOR_B)
    assert any(int(f) & STRAIGHT_OFFMESH for f in np.asarray(straight.flags).tolist())
    path = tmp_path / "cache.npz"
    cache.save(path)
    loaded = TileCache.load(path)
    np.testing.assert_array_equal(loaded.auto_links.start, cache.auto_links.start)
    assert len(loaded.links()) == len(cache.links())
    cache.remove(block)
    cache.update()
    assert len(cache.links()) == len(every) == stored()


def _box(lo, hi):
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    v = np.array(
        [[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0],
         [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]], np.float32,
    )  # fmt: skip
    t = np.array(
        [[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
         [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]], np.int32,
    )  # fmt: skip
    return v, t


def test_a_blocked_link_starting_on_a_tile_border_leaves_the_tile_that_kept_it():
    """A drop link starting exactly on a tile border (x 7.2, tiles 2.4 m wide) is kept by
    the tile whose float32 bounds hold its start (Detour's classification): the tile on the
    low side here. The cache relinked the tile the floor division names, the high side, so
    the blocked link stayed in the navmesh and paths could still take it."""
    ground, platform = (
        _box((0, 0, -0.5), (12.615, 12.615, 0.0)),
        _box((4.116, 8.106, 2.146), (7.804, 11.96, 2.346)),
    )
    verts = np.concatenate([ground[0], platform[0]])
    tris = np.concatenate([ground[1], platform[1] + 8]).astype(np.int32)
    cache = TileCache.build(verts, tris, NavConfig(auto_links=True), 8, workers=1)
    auto = cache.auto_links
    assert auto is not None
    on_border = np.flatnonzero(np.isclose(auto.start[:, 0], 7.2, atol=1e-5))
    assert on_border.shape[0] > 0

    def stored() -> set[int]:
        return {
            int(u) for d in cache.navmesh.tiles if d is not None
            for u in d.off_mesh_user_id.tolist()
        }  # fmt: skip

    assert stored() == {int(u) for u in auto.user_id.tolist()}
    link = int(on_border[0])
    start, end = auto.start[link].astype(float), auto.end[link].astype(float)
    mid = start + 0.75 * (end - start)  # a floating box across the arc: it marks no floor
    box = cache.add(ob.box((mid[0] - 0.2, mid[1] - 0.2, 0.6), (mid[0] + 0.2, mid[1] + 0.2, 1.4)))
    cache.update()
    active = {int(u) for u in cache.links().user_id.tolist()}
    assert int(auto.user_id[link]) not in active
    assert stored() == active
    cache.remove(box)
    cache.update()
    assert stored() == {int(u) for u in auto.user_id.tolist()}


def test_a_cache_keeps_the_world_s_warnings():
    # A floor 1000 km out: float32 steps a sizeable share of a cell there. The tiled bake's
    # warnings had it; a tile cache (Blender's tiled bakes) dropped it.
    quad = np.array([[0, 0, 0], [20, 0, 0], [20, 20, 0], [0, 20, 0]], np.float32)
    far = quad + np.array([1e6, 0, 0], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]])
    cache = tilecache.TileCache.build(far, tris, NavConfig(), 32, workers=1)
    assert any("from the origin" in w for w in cache.warnings)
    near = tilecache.TileCache.build(quad, tris, NavConfig(), 32, workers=1)
    assert near.warnings == []
