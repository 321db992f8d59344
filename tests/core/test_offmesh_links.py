"""Hand-made off-mesh links (#15 item 3): parsing, paths that take them, batch = single query,
exports. The real Detour's answers on the same links are in tests/runtime."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from core import export, pipeline
from core.config import NavConfig
from core.errors import VoxNavError
from core.nav.navdata import create_nav_mesh_data
from core.nav.navmesh import NavMesh
from core.nav.query import PARTIAL_RESULT, NavMeshQuery
from core.offmesh import OffMeshLinks, links_from_specs, parse_link_spec

from . import linkscenes as L

GAP_LINK = "9.5,4,0:12,4,0"
DROP_LINK = "5,8.5,2:5,7,0:oneway"
STRAIGHT_OFFMESH = 0x04


def navmesh(links: OffMeshLinks | None) -> tuple[NavMeshQuery, pipeline.BakeResult]:
    verts, tris = L.gap_and_ledge_scene()
    result = pipeline.bake(verts, tris, NavConfig(), offmesh_links=links)
    cfg = result.config
    data = create_nav_mesh_data(
        result.polymesh,
        result.detail,
        walkable_height=cfg.agent_height,
        walkable_radius=cfg.agent_radius,
        walkable_climb=cfg.agent_max_climb,
        offmesh=result.offmesh_links,
    )
    return NavMeshQuery(NavMesh.from_data(data)), result


def single_path(query: NavMeshQuery, a, b):
    s = query.find_nearest_poly(np.array(a, np.float32), (2.0, 2.0, 4.0))
    g = query.find_nearest_poly(np.array(b, np.float32), (2.0, 2.0, 4.0))
    path = query.find_path(s.ref, g.ref, s.point, g.point)
    end = g.point
    if path.status & PARTIAL_RESULT:
        end = query.closest_point_on_poly(int(path.polys[-1]), end)[1]
    return path, query.find_straight_path(s.point, end, path.polys), (s, g, end)


def test_link_specs_parse_with_options_and_frames():
    links = links_from_specs([GAP_LINK, DROP_LINK + ",radius=0.5,area=7,flags=0x9"])
    assert len(links) == 2
    np.testing.assert_array_equal(links.start[1], [5.0, 8.5, 2.0])
    assert links.bidirectional.tolist() == [True, False]
    assert links.radius.tolist() == pytest.approx([0.6, 0.5])
    assert links.area.tolist() == [5, 7] and links.flags.tolist() == [8, 9]
    assert links.user_id.tolist() == [0, 1]
    recast = parse_link_spec("1,2,3:4,5,6", recast_frame=True)  # (x, up, z) -> (x, z, up)
    np.testing.assert_array_equal(recast.start[0], [1.0, 3.0, 2.0])
    assert links_from_specs([]) is None


@pytest.mark.parametrize(
    "spec, words",
    [
        ("1,2:3,4,5", "not X,Y,Z"),
        ("1,2,3", "START:END"),
        ("1,2,3:4,5,6:bounce", "unknown option"),
        ("1,2,3:4,5,6:radius=x", "not a number"),
        ("1,2,3:4,5,6:radius=0", "radius must be > 0"),
        ("1,2,3:4,5,6:area=64", "area must be 0..63"),
        ("nan,2,3:4,5,6", "not a finite number"),
        # Infinite in float32, where links are kept: JSON got the token Infinity.
        ("1,2,3:4,5,6:radius=inf", "radius must be > 0 and <= 1e"),
        ("1,2,3:4,5,6:radius=1e39", "radius must be > 0 and <= 1e"),
        ("1e39,2,3:4,5,6", "start point is not a finite number within"),
        ("1,2,3:4,5,-1e10", "end point is not a finite number within"),
    ],
)
def test_bad_link_specs_say_what_is_wrong(spec, words):
    with pytest.raises(VoxNavError, match=words):
        parse_link_spec(spec)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        # A (3, 4) array was reshaped into four links of scrambled coordinates.
        (dict(start=np.zeros((3, 4)), end=np.ones((3, 4))), r"an \(n, 3\) array; got shape"),
        (dict(area=5.7), "area must be whole numbers"),  # was stored as 5
        (dict(bidirectional="no"), "bidirectional must be True or False"),  # was True
        (dict(radius=[1.0, 2.0]), r"radius must be one value or one per link \(1\)"),
        (dict(start="here"), "start points must be numbers"),
    ],
)
def test_links_from_a_script_with_the_wrong_kind_of_values_are_named(kwargs, words):
    args = {"start": [[0.0, 0.0, 0.0]], "end": [[1.0, 0.0, 0.0]], "radius": 1.0, **kwargs}
    with pytest.raises(VoxNavError, match=words):
        OffMeshLinks.create(**args)
    one = OffMeshLinks.create([0, 0, 0], (1, 0, 0), 1, bidirectional=0, area=np.int8(5))
    assert len(one) == 1 and not one.bidirectional[0] and one.area[0] == 5


def test_without_links_the_gap_and_the_ledge_are_partial():
    query, _ = navmesh(None)
    for a, b in ((L.ON_FLOOR_A, L.ON_FLOOR_B), (L.ON_LEDGE, L.ON_FLOOR_A)):
        path, _straight, _ = single_path(query, a, b)
        assert path.status & PARTIAL_RESULT


def test_paths_take_the_gap_link_both_ways_and_the_drop_only_down():
    query, result = navmesh(links_from_specs([GAP_LINK, DROP_LINK]))
    assert len(result.offmesh_links) == 2
    for a, b in ((L.ON_FLOOR_A, L.ON_FLOOR_B), (L.ON_FLOOR_B, L.ON_FLOOR_A)):
        path, straight, _ = single_path(query, a, b)
        assert not path.status & PARTIAL_RESULT
        assert STRAIGHT_OFFMESH in straight.flags.tolist()
    down, straight, _ = single_path(query, L.ON_LEDGE, L.ON_FLOOR_A)
    assert not down.status & PARTIAL_RESULT
    assert STRAIGHT_OFFMESH in straight.flags.tolist()
    assert straight.points[-1][2] < 1.0  # ends on the floor below
    up, straight, _ = single_path(query, L.ON_FLOOR_A, L.ON_LEDGE)
    assert up.status & PARTIAL_RESULT  # the drop is one-way
    assert straight.points[:, 2].max() < 1.0  # never on the ledge


def test_heights_and_closest_points_on_a_link_polygon_are_detours():
    """dtNavMeshQuery::getPolyHeight answers on an off-mesh link's polygon (the height along
    the link at its point nearest pos); VoxNav's single and batch forms failed there. The
    batch closestPointOnPoly gave the query point back, where the single one (and Detour)
    give the nearest point of the link's segment. Compared with real Detour by a helper: a
    point half way along a link 0.2 to 1.2 m high read 0.699999809 in both."""
    query, _ = navmesh(links_from_specs([DROP_LINK]))
    nav = query.nav
    link = int(np.flatnonzero(nav.poly_type == 1)[0])
    a, b = nav.poly_pos[link, 0], nav.poly_pos[link, 1]  # Detour's Y-up frame
    ends = np.array([a, b])[:, [0, 2, 1]]  # Z-up (x, y, z) of Detour's (x, z, y), as queried
    assert ends[0, 2] > ends[1, 2] + 1.5  # down from the ledge
    points = np.array([ends[0] * 0.75 + ends[1] * 0.25, ends[1] + (3.0, 0.0, 5.0)], np.float32)
    points[0, 0] += 0.5  # beside the segment: the nearest point of it counts
    heights = query.get_poly_height_batch(np.full(2, link), points)
    closest = query.closest_point_on_poly_batch(np.full(2, link), points)
    for i, point in enumerate(points):
        single = query.get_poly_height(link, point)
        assert single.status == 0x40000000 and heights.status[i] == single.status
        assert np.float32(single.height) == heights.height[i]
        status, at, over = query.closest_point_on_poly(link, point)
        assert np.array_equal(closest[1][i], at) and not over and not closest[2][i]
        assert np.float32(single.height) == np.float32(at[2])  # the same point of the link
    quarter = ends[0, 2] + (ends[1, 2] - ends[0, 2]) * 0.25  # t rounds in float32
    assert heights.height[0] == pytest.approx(quarter, abs=1e-6)
    assert heights.height[1] == np.float32(ends[1, 2])  # past its end: the end's height


def test_batch_paths_follow_links_exactly_as_single_queries():
    query, _ = navmesh(links_from_specs([GAP_LINK, DROP_LINK]))
    points = [L.ON_FLOOR_A, L.ON_FLOOR_B, L.ON_LEDGE, (18.0, 7.0, 0.0), (1.0, 13.0, 2.0)]
    pairs = [(a, b) for a in range(len(points)) for b in range(len(points)) if a != b]
    near = query.find_nearest_poly_batch(np.array(points, np.float32), (2.0, 2.0, 4.0))
    ia, ib = np.array(pairs).T
    corridors = query.find_path_batch(near.ref[ia], near.ref[ib], near.point[ia], near.point[ib])
    ends = []
    for k, (a, b) in enumerate(pairs):
        path, straight, (_s, _g, end) = single_path(query, points[a], points[b])
        assert int(corridors.status[k]) == path.status
        got = corridors.polys[corridors.start[k] : corridors.start[k] + corridors.count[k]]
        np.testing.assert_array_equal(got, path.polys)
        ends.append(end)
    straight_batch = query.find_straight_path_batch(near.point[ia], np.array(ends), corridors)
    for k, (a, b) in enumerate(pairs):
        _path, straight, _ = single_path(query, points[a], points[b])
        s, n = int(straight_batch.start[k]), int(straight_batch.count[k])
        np.testing.assert_array_equal(straight_batch.points[s : s + n], straight.points)
        np.testing.assert_array_equal(straight_batch.flags[s : s + n], straight.flags)


def test_exports_carry_the_links(tmp_path):
    links = links_from_specs([GAP_LINK, DROP_LINK])
    _query, result = navmesh(links)
    export.write_json(tmp_path / "nav.json", result.polymesh, result.detail, offmesh=links)
    doc = json.loads((tmp_path / "nav.json").read_text())
    back = export.offmesh_links_from_list(doc["offmesh_links"])
    np.testing.assert_array_equal(back.start, links.start)
    assert back.bidirectional.tolist() == [True, False]
    export.write_obj(tmp_path / "nav.obj", result.polymesh, result.detail, offmesh=links)
    text = (tmp_path / "nav.obj").read_text()
    assert "o offmesh_links" in text and text.count("\nl ") == 2


def test_cli_path_takes_a_link_and_refuses_a_bad_one(tmp_path):
    verts, tris = L.gap_and_ledge_scene()
    mesh = tmp_path / "scene.obj"
    lines = [f"v {x} {z} {-y}" for x, y, z in verts.tolist()]  # Blender's OBJ axes
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in tris.tolist()]
    mesh.write_text("\n".join(lines) + "\n")
    base = [sys.executable, "-m", "core", "path", str(mesh), "--from", "3", "4", "0"]
    base += ["--to", "18", "4", "0"]
    plain = subprocess.run(base, capture_output=True, text=True)
    assert plain.returncode == 0 and "partial" in plain.stdout
    linked = subprocess.run(base + ["--offmesh-link", GAP_LINK], capture_output=True, text=True)
    assert linked.returncode == 0 and "reached" in linked.stdout
    assert "off-mesh link" in linked.stdout
    bad = subprocess.run(base + ["--offmesh-link", "1,2,3"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--offmesh-link" in bad.stderr
    assert "Traceback" not in bad.stderr
    # A link starting off the navmesh: left out, and said so as `bake` says it (path was
    # silent, and the path just went without it), solo and tiled.
    for tiled in ([], ["--tile-size", "16"]):
        off = base + ["--offmesh-link=500,500,0:501,501,0", *tiled]
        run = subprocess.run(off, capture_output=True, text=True)
        assert run.returncode == 0 and "start off the navmesh" in run.stderr
        # The .json and .obj list the links as given: the warning says so (it said only
        # "these are left out", which their files contradicted).
        assert "a .json or .obj lists the links as given" in " ".join(run.stderr.split())


def test_pruning_follows_links_and_their_direction():
    verts, tris = L.gap_and_ledge_scene()
    from_a = np.array([L.ON_FLOOR_A])

    def kept(links, seeds):
        result = pipeline.bake(verts, tris, NavConfig(), offmesh_links=links, reachable_from=seeds)
        pmesh = result.polymesh
        centres = pmesh.world_verts()[pmesh.polys[:, : pmesh.nvp].astype(np.int64)[:, 0]]
        return result.prune, centres[:, 2]  # height of a vertex of each kept polygon

    report, heights = kept(None, from_a)
    assert report.polys_cut > 0  # floor B, the ledge and the pit are islands
    with_links, heights = kept(links_from_specs([GAP_LINK, DROP_LINK]), from_a)
    # The gap link keeps floor B; the drop is one-way, so the ledge stays cut from floor A.
    assert with_links.polys_kept > report.polys_kept
    assert heights.max() < 1.0
    from_ledge, heights = kept(links_from_specs([DROP_LINK]), np.array([L.ON_LEDGE]))
    assert heights.max() > 1.5 and heights.min() < 1.0  # ledge and, down the drop, floor A


def test_hand_links_reach_every_agent_solo_and_tiled(tmp_path, capsys):
    """--offmesh-link with --agent: every agent's path crosses the gap (solo and tiled), and
    every agent's export carries the link, as separate runs per agent do."""
    from core.__main__ import main
    from core.nav.binio import read_navmesh_set

    mesh = L.write_obj(tmp_path / "scene.obj", *L.gap_and_ledge_scene())
    route = ["--from", "3", "4", "0", "--to", "18", "4", "0", "--offmesh-link", GAP_LINK]
    agents = ["--agent", "small:radius=0.3", "--agent", "big:radius=0.6"]
    for tiled in ([], ["--tile-size", "32", "--workers", "1"]):
        assert main(["path", str(mesh), *route, *agents, *tiled]) == 0
        out = capsys.readouterr().out
        assert out.count("path: reached") == 2 and "partial" not in out, out
        for radius in ("0.3", "0.6"):  # each section is what a separate run prints
            assert main(["path", str(mesh), *route, *tiled, "--agent-radius", radius]) == 0
            assert capsys.readouterr().out.split("\n", 1)[0] in out
    link = ["--offmesh-link", GAP_LINK]
    assert main(["bake", str(mesh), "--out", str(tmp_path / "nav.json"), *link, *agents]) == 0
    for name in ("small", "big"):
        doc = json.loads((tmp_path / f"nav_{name}.json").read_text())
        assert len(doc["offmesh_links"]) == 1
    tiled = ["--tile-size", "32", "--workers", "1"]
    assert main(["bake", str(mesh), "--out", str(tmp_path / "t.bin"), *link, *agents, *tiled]) == 0
    for name in ("small", "big"):
        tiles = read_navmesh_set(tmp_path / f"t_{name}.bin").tiles
        assert sum(int(t.off_mesh_count) for t in tiles) == 1


def test_tile_cache_keeps_links_through_rebuilds_and_save_load(tmp_path):
    """Hand links in a tiled bake with obstacles (the Blender tiled workflow): each tile's data
    carries the links starting in it, after an obstacle rebuild and after a save and load."""
    from core import obstacles
    from core.tilecache import TileCache

    verts, tris = L.gap_and_ledge_scene()
    links = links_from_specs([GAP_LINK])

    def crosses(cache) -> bool:
        query = NavMeshQuery(cache.navmesh)
        path, straight, _ = single_path(query, L.ON_FLOOR_A, L.ON_FLOOR_B)
        flags = np.asarray(straight.flags).tolist()
        return not (path.status & PARTIAL_RESULT) and any(f & STRAIGHT_OFFMESH for f in flags)

    plain = TileCache.build(verts, tris, NavConfig(), 32, workers=1)
    assert not crosses(plain)
    cache = TileCache.build(verts, tris, NavConfig(), 32, workers=1, offmesh_links=links)
    assert crosses(cache)
    before = cache.navmesh
    oid = cache.add(obstacles.cylinder((15.0, 6.5, 0.0), 0.8, 2.0))
    report = cache.update()
    assert report.rebuilt and cache.navmesh is not before
    assert crosses(cache)  # the rebuilt tiles were linked again with their links
    path = cache.save(tmp_path / "cache.npz")
    loaded = TileCache.load(path)
    assert crosses(loaded) and len(loaded.offmesh_links) == 1
    np.testing.assert_array_equal(loaded.offmesh_links.start, links.start)
    assert loaded.obstacles.ids() == cache.obstacles.ids() == [oid]
    assert loaded.navmesh.poly_count == cache.navmesh.poly_count


def test_a_link_starting_off_the_navmesh_is_named_in_a_warning(tmp_path, capsys):
    """Detour drops a link whose start no tile holds: solo, tiled and agent bakes say so."""
    from core.__main__ import main

    verts, tris = L.gap_and_ledge_scene()
    links = links_from_specs(["500,500,0:501,500,0", GAP_LINK])
    result = pipeline.bake(verts, tris, NavConfig(), offmesh_links=links)
    off = [w for w in result.warnings if "off-mesh link" in w]
    assert len(off) == 1 and "1 of 2" in off[0] and "(500, 500, 0)" in off[0]
    placed = pipeline.bake(verts, tris, NavConfig(), offmesh_links=links_from_specs([GAP_LINK]))
    assert not [w for w in placed.warnings if "off-mesh link" in w]
    mesh = L.write_obj(tmp_path / "scene.obj", verts, tris)
    far = ["--offmesh-link", "500,500,0:501,500,0"]
    for extra in (["--tile-size", "32", "--workers", "1"], ["--agent", "small:radius=0.3"]):
        out = tmp_path / "nav.bin"
        assert main(["bake", str(mesh), "--out", str(out), *far, *extra]) == 0
        assert "(500, 500, 0)" in capsys.readouterr().err


def _three_floors():
    """F | G | I: three 6 m floors between two thin walls (Z-up)."""
    parts = [
        L.box((0, 0, -1), (6, 6, 0)), L.box((6, 0, -1), (6.2, 6, 3)),
        L.box((6.2, 0, -1), (12, 6, 0)), L.box((12, 0, -1), (12.2, 6, 3)),
        L.box((12.2, 0, -1), (18, 6, 0)),
    ]  # fmt: skip
    return L.merge(*parts)


def test_pruning_removes_the_links_of_removed_polygons():
    """A link F -> G makes G reachable from F; a link I -> F (radius 2) starts on I 1.6 m from
    G. Pruning from F removes I, and kept its link: Detour attached it to G, so a path G -> F
    existed after pruning that did not before. Solo and tiled."""
    from core import prune, tiles

    verts, tris = _three_floors()
    hand = OffMeshLinks.create(
        [[3, 3, 0], [13.0, 3, 0]], [[9, 3, 0], [3, 5, 0]], [0.6, 2.0], False, user_id=[0, 1]
    )
    config = NavConfig()
    on_f, on_g = np.array([2, 2, 0], np.float32), np.array([9, 2, 0], np.float32)

    def g_reaches_f(nav) -> bool:
        query = NavMeshQuery(nav)
        s, g = query.find_nearest_poly(on_g), query.find_nearest_poly(on_f)
        path = query.find_path(s.ref, g.ref, s.point, g.point)
        return not (path.status & PARTIAL_RESULT) and int(path.polys[-1]) == g.ref

    def solo_nav(result):
        data = create_nav_mesh_data(
            result.polymesh, result.detail, walkable_height=config.agent_height,
            walkable_radius=config.agent_radius, walkable_climb=config.agent_max_climb,
            offmesh=result.offmesh_links,
        )  # fmt: skip
        return NavMesh.from_data(data)

    whole = pipeline.bake(verts, tris, config, offmesh_links=hand)
    pruned = pipeline.bake(verts, tris, config, offmesh_links=hand, reachable_from=[on_f])
    assert not g_reaches_f(solo_nav(whole))
    assert pruned.prune.polys_cut > 0 and pruned.prune.links_cut.tolist() == [1]
    assert pruned.offmesh_links.user_id.tolist() == [0]
    assert not g_reaches_f(solo_nav(pruned))
    bake = tiles.bake_tiled(verts, tris, config, 32, workers=1)
    bake.offmesh_links = hand
    report = prune.prune_tiled(bake, [on_f])
    assert report.links_cut.tolist() == [1] and bake.offmesh_links.user_id.tolist() == [0]
    assert not g_reaches_f(bake.navmesh())


def test_a_link_whose_end_joins_nothing_is_said_solo_and_tiled():
    """A hand link whose end lies off the navmesh, or (tiled) more than one tile from its
    start, joins nothing at its end: no path takes it, and only a path's partial status said
    so. Now the bake warns; a link that lands says nothing."""
    from core import tiles

    verts, tris = L.merge(L.box((0, 0, -1), (10, 8, 0)), L.box((14, 0, -1), (24, 8, 0)))
    long_jump = OffMeshLinks.create([(8.0, 4.0, 0.0)], [(16.0, 4.0, 0.0)], 0.6)
    into_air = OffMeshLinks.create([(8.0, 4.0, 0.0)], [(12.0, 4.0, 0.0)], 0.6)
    said = "end off the navmesh"
    solo = pipeline.bake(verts, tris, NavConfig(), offmesh_links=long_jump)
    assert not any(said in w for w in solo.warnings)
    solo = pipeline.bake(verts, tris, NavConfig(), offmesh_links=into_air)
    assert any(said in w and "link 0 ending at (12, 4, 0)" in w for w in solo.warnings)
    from core.offmesh import link_warnings

    for tile_size, lands in ((64, True), (16, False)):  # 16 cells: 4.8 m tiles
        bake = tiles.bake_tiled(verts, tris, NavConfig(), tile_size, workers=1)
        bake.offmesh_links = long_jump
        warned = link_warnings(long_jump, bake.navmesh)
        assert (not warned) == lands, tile_size
        if not lands:
            assert "raise tile_size or shorten the link" in warned[0]


def test_a_tile_cache_update_leaves_the_previous_navmesh_and_equals_a_full_bake():
    """Detour snaps an off-mesh link's end onto the polygon it lands on, in the tile's data:
    the tile cache's update wrote it into data the previous navmesh shared (its .bin
    changed), and an end whose landing tile went kept the stale snapped point where a full
    bake has the given one (a helper)."""
    from core import obstacles as ob
    from core import tiles
    from core.nav import binio
    from core.tilecache import TileCache

    verts, tris = L.gap_and_ledge_scene()
    links = links_from_specs(["5,9.5,2:5,6,0:oneway,radius=2"])
    cache = TileCache.build(verts, tris, NavConfig(), 12, workers=1, offmesh_links=links)
    old = cache.navmesh
    before = binio.navmesh_set_bytes(list(old.tiles), old.params)
    hole = cache.add(ob.cylinder((5.0, 6.0, -1.0), 1.0, 3.0))  # around the link's end
    cache.update()
    assert binio.navmesh_set_bytes(list(old.tiles), old.params) == before
    cache.remove(hole)
    cache.add(ob.cylinder((5.0, 4.0, -1.0), 30.0, 1.5))  # every floor below the ledge
    cache.update()
    full = tiles.bake_tiled(verts, tris, NavConfig(), 12, workers=1,
                            volumes=cache.obstacles.volumes())  # fmt: skip
    full.offmesh_links = links

    def link_ends(navmesh):
        return [
            data.verts[data.poly_verts[data.off_mesh_base : data.off_mesh_base +
                                       data.off_mesh_count, 1]].tolist()
            for data in navmesh.tiles if data is not None and data.off_mesh_count
        ]  # fmt: skip

    assert link_ends(cache.navmesh) == link_ends(full.navmesh()) == [[[5.0, 0.0, 6.0]]]
