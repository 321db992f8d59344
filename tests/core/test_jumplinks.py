"""Automatic jump and drop links (core.jumplinks) on the gap-and-ledge scene (linkscenes):
links across the gap from both sides, down the ledge and never up, none through solid (an
independent slow check on the heightfield), spacing, a wall that blocks jumps, the literal
oracle, settings and the several-agents bake."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import pipeline
from core.agents import AgentType, bake_agents
from core.config import NavConfig
from core.errors import VoxNavError
from core.jumplinks import arc_points, boundary_edges, find_auto_links
from core.offmesh import OffMeshLinks

from . import linkscenes
from .oracle import auto_links_slow

ON = NavConfig(auto_links=True)


def _bake(config=ON, extra=()):
    verts, tris = linkscenes.merge(linkscenes.gap_and_ledge_scene(), *extra)
    return pipeline.bake(verts, tris, config)


@pytest.fixture(scope="module")
def scene_bake():
    return _bake()


def _climb(result) -> float:
    d = result.config.derived()
    return float(d.walkable_climb * d.ch)


def _on_floor_a(p):
    return p[..., 0] < 10.0


def _on_floor_b(p):
    return p[..., 0] > 10.0 + linkscenes.GAP


def _level(p, z, tol):
    return np.abs(p[..., 2] - z) <= tol


def test_links_cross_the_gap_from_both_sides_and_drop_off_the_ledge(scene_bake):
    links = scene_bake.offmesh_links
    climb = _climb(scene_bake)
    start, end, two_way = links.start, links.end, links.bidirectional
    floor_z = float(np.min(start[:, 2]))  # the floors' voxel top
    low_start = _level(start, floor_z, climb)
    a_to_b = _on_floor_a(start) & _on_floor_b(end) & low_start & _level(end, floor_z, climb)
    b_to_a = _on_floor_b(start) & _on_floor_a(end) & low_start & _level(end, floor_z, climb)
    drops = (start[:, 1] > 8.0) & (end[:, 1] < 8.0) & (start[:, 2] - end[:, 2] > climb)
    assert a_to_b.sum() >= 3 and b_to_a.sum() >= 3
    assert two_way[a_to_b | b_to_a].all()
    assert drops.sum() >= 3
    assert not two_way[drops].any()  # drops are one-way, down
    # Nothing goes up by more than the climb, and every link is a jump or a drop.
    assert not (end[:, 2] - start[:, 2] > climb + 1e-4).any()
    assert (a_to_b | b_to_a | drops).all()
    assert scene_bake.counts["auto_links"] == len(links) == scene_bake.auto_link_count


def _spans_of(hf, x, y):
    ix = math.floor((x - float(hf.bmin[0])) / float(hf.cs))
    iy = math.floor((y - float(hf.bmin[1])) / float(hf.cs))
    if not (0 <= ix < hf.width and 0 <= iy < hf.height):
        return []
    c = ix + iy * hf.width
    return range(int(hf.col_start[c]), int(hf.col_start[c + 1]))


def _solid_hits(result, links, samples=400):
    """Independent slow check: every arc point, and the agent's height above it, against
    every span of its column (one cell height of tolerance under the arc); each end on a
    walkable span top within climb. Returns the offending link ids."""
    hf = result.heightfield
    ch, z0 = float(hf.ch), float(hf.bmin[2])
    height = float(result.config.derived().walkable_height * hf.ch)
    climb = _climb(result)
    bad = set()
    arcs = arc_points(links.start, links.end, samples)
    for i, arc in enumerate(arcs):
        for x, y, z in arc:
            for s in _spans_of(hf, x, y):
                bottom, top = z0 + float(hf.smin[s]) * ch, z0 + float(hf.smax[s]) * ch
                if bottom < z + height and top > z + ch + 1e-6:
                    bad.add(i)
        for x, y, z in (links.start[i], links.end[i]):
            tops = [z0 + float(hf.smax[s]) * ch for s in _spans_of(hf, x, y) if hf.area[s] != 0]
            if not any(abs(t - z) <= climb + 1e-5 for t in tops):
                bad.add(i)
    return sorted(bad)


def test_no_link_passes_through_solid_and_every_end_is_on_walkable_ground(scene_bake):
    assert len(scene_bake.offmesh_links) > 0
    assert _solid_hits(scene_bake, scene_bake.offmesh_links) == []


def test_the_slow_check_sees_a_link_through_solid(scene_bake):
    # The check itself can fail: a link from the floor straight into the ledge's block.
    through = OffMeshLinks.create([[5.0, 5.0, 0.2]], [[5.0, 11.0, 0.2]], 0.6)
    assert _solid_hits(scene_bake, through) == [0]


def test_no_links_when_auto_links_is_off():
    result = _bake(NavConfig())
    assert len(result.offmesh_links) == 0
    assert "auto_links" not in result.counts
    assert "links" not in result.timings


def _gap_edge_links(result):
    links = result.offmesh_links
    sel = _on_floor_a(links.start) & _on_floor_b(links.end)
    return links.start[sel]


@pytest.mark.parametrize("spacing", [0.7, 1.0, 2.5])
def test_spacing_along_an_edge(spacing):
    result = _bake(ON.replace(link_spacing=spacing))
    starts = _gap_edge_links(result)
    a, b, normal = boundary_edges(result.polymesh)
    # floor_a's edge facing the gap: its boundary edges with an outward +x normal.
    on_a = (a[:, 0] < 10.0) & (a[:, 1] < 8.0) & (b[:, 1] < 8.0) & (np.abs(a[:, 2]) < 1.0)
    facing = (normal[:, 0] > 0.99) & on_a
    length = np.hypot(*(b[facing] - a[facing])[:, :2].T)
    expected = int(np.maximum(1, np.floor(length / spacing + 1e-9)).sum())
    assert len(starts) == expected
    ys = np.sort(starts[:, 1])
    assert (np.diff(ys) >= spacing - 1e-5).all()


def test_a_wall_in_the_gap_blocks_the_jumps_behind_it():
    open_bake = _bake()
    # A 4 m wall in the middle of the gap, along half of it (y 0..4).
    wall = linkscenes.box((10.5, -0.5, -10.0), (11.0, 4.0, 4.0))
    walled = _bake(extra=(wall,))
    assert _solid_hits(walled, walled.offmesh_links) == []
    for result in (open_bake, walled):
        links = result.offmesh_links
        across = (_on_floor_a(links.start) & _on_floor_b(links.end)) | (
            _on_floor_b(links.start) & _on_floor_a(links.end)
        )
        # The agent (radius 0.6) brushes the wall within 0.6 of its end.
        behind = across & (links.start[:, 1] < 4.0 + 0.6)
        free = across & (links.start[:, 1] > 4.0 + 0.6 + 1.5)
        if result is open_bake:
            assert behind.sum() >= 4 and free.sum() >= 2
        else:
            assert behind.sum() == 0 and free.sum() >= 2


def test_fast_equals_the_literal_oracle():
    verts, tris = linkscenes.merge(
        linkscenes.gap_and_ledge_scene(),
        linkscenes.box((10.5, -0.5, -10.0), (11.0, 4.0, 4.0)),
        linkscenes.box((3.0, 2.0, -1.0), (4.0, 3.0, 1.5)),  # a block: links around it fail
    )
    # Radius 0.3 (one cell): the first landing off the ledge is blocked (its arc grazes the
    # ledge), a later one is taken; 0.6 and 0.9 as well.
    cases = ((1.0, 3.5, 0.6), (0.45, 2.0, 0.6), (1.7, 6.0, 0.6), (1.0, 3.5, 0.3), (0.7, 3.5, 0.9))
    for spacing, jump, radius in cases:
        config = ON.replace(link_spacing=spacing, max_jump_distance=jump, agent_radius=radius)
        result = pipeline.bake(verts, tris, config)
        d = config.derived()
        kwargs = dict(
            agent_height=float(d.walkable_height * d.ch),
            agent_radius=float(np.float32(config.agent_radius)),
            agent_climb=float(d.walkable_climb * d.ch),
            max_drop=3.0,
            max_jump_distance=jump,
            spacing=spacing,
        )
        args = (result.polymesh, result.detail, result.compact, result.heightfield)
        fast = find_auto_links(*args, **kwargs)
        slow = auto_links_slow(*args, **kwargs)
        assert len(fast) == len(slow) > 0
        np.testing.assert_array_equal(fast.start, np.array([s for s, _, _ in slow], np.float32))
        np.testing.assert_array_equal(fast.end, np.array([e for _, e, _ in slow], np.float32))
        assert fast.bidirectional.tolist() == [b for _, _, b in slow]


def test_an_agent_of_one_cell_radius_drops_off_the_ledge_too(monkeypatch):
    # Its first landing lay so near the ledge's wall that the arc grazed the edge: no drop
    # link at all (radius 0.3 at 0.3 m cells; 0.35 had 8), the floor below unreachable.
    from core import jumplinks

    verts, tris = linkscenes.gap_and_ledge_scene()
    drops = {}
    for radius in (0.3, 0.6):
        links = pipeline.bake(verts, tris, ON.replace(agent_radius=radius)).offmesh_links
        drops[radius] = int((~links.bidirectional).sum())
    assert drops[0.3] >= drops[0.6] - 1 > 0
    monkeypatch.setattr(jumplinks, "NEXT_LANDINGS", 0)  # the first landing only: none
    links = pipeline.bake(verts, tris, ON.replace(agent_radius=0.3)).offmesh_links
    assert int((~links.bidirectional).sum()) == 0


def test_max_drop_and_max_jump_distance_limit_the_links():
    shallow = _bake(ON.replace(max_drop=1.5))  # the ledge is 2 m high
    assert not (~shallow.offmesh_links.bidirectional).any()
    short = _bake(ON.replace(max_jump_distance=2.0))  # the navmesh gap is about 3 m
    links = short.offmesh_links
    assert not (_on_floor_a(links.start) & _on_floor_b(links.end)).any()
    assert (~links.bidirectional).any()  # the drop (about 1.5 m out) is still found


def test_hand_links_come_first_and_ids_follow_them():
    verts, tris = linkscenes.gap_and_ledge_scene()
    hand = OffMeshLinks.create([[3.0, 4.0, 0.0]], [[5.0, 11.0, 2.0]], 0.6, user_id=[7])
    result = pipeline.bake(verts, tris, ON, offmesh_links=hand)
    links = result.offmesh_links
    assert len(links) == 1 + result.auto_link_count
    np.testing.assert_array_equal(links.start[0], hand.start[0])
    assert links.user_id.tolist() == [7] + list(range(8, 8 + result.auto_link_count))


def test_arc_points_end_at_the_link_ends_and_peak_above_the_higher_end():
    start = np.array([[0.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    end = np.array([[0.0, 1.6, 0.0], [3.0, 4.0, 0.5]])
    arc = arc_points(start, end, 400)
    np.testing.assert_allclose(arc[:, 0], start)
    np.testing.assert_allclose(arc[:, -1], end)
    horizontal = np.hypot(*(end - start)[:, :2].T)
    peak = arc[:, :, 2].max(axis=1)
    np.testing.assert_allclose(peak, np.maximum(start[:, 2], end[:, 2]) + horizontal / 4, atol=1e-4)
    # Straight in plan.
    np.testing.assert_allclose(arc[1, :, 0] * 4.0, arc[1, :, 1] * 3.0, atol=1e-9)


@pytest.mark.parametrize(
    "name, value", [("max_drop", -1.0), ("max_jump_distance", float("nan")), ("link_spacing", 0.0)]
)
def test_bad_link_settings_are_refused(name, value):
    with pytest.raises(VoxNavError, match=name):
        NavConfig(**{name: value}).validate()


def test_agents_bake_finds_each_agents_links_as_a_separate_bake():
    verts, tris = linkscenes.gap_and_ledge_scene()
    # "mid" and "big" share a compact heightfield: their detail meshes are built together
    # before each finds its links.
    agents = [
        AgentType("small", radius=0.3, height=1.6),
        AgentType("mid", radius=0.6),
        AgentType("big", radius=0.9),
    ]
    results = bake_agents(verts, tris, ON, agents)
    for agent in agents:
        alone = pipeline.bake(verts, tris, agent.config(ON))
        mine = results[agent.name].offmesh_links
        assert len(mine) > 0
        for name in ("start", "end", "bidirectional", "radius", "user_id"):
            np.testing.assert_array_equal(getattr(mine, name), getattr(alone.offmesh_links, name))


def test_core_cli_bake_with_auto_links(tmp_path, capsys):
    from core.__main__ import main

    mesh = linkscenes.write_obj(tmp_path / "scene.obj", *linkscenes.gap_and_ledge_scene())
    out = tmp_path / "nav.obj"
    assert main(["bake", str(mesh), "--out", str(out), "--auto-links", "on"]) == 0
    text = capsys.readouterr().out
    count = int(text.split("auto_links=")[1].split()[0])
    assert count == len(_bake().offmesh_links) > 0
    assert main(["bake", str(mesh), "--out", str(out), "--max-drop", "-1"]) == 2
    assert "max_drop" in capsys.readouterr().err
    # Tiled: each tile finds its links; its .bin stores them (links starting in the tile).
    from core.nav.binio import read_navmesh_set

    tiled = tmp_path / "nav.bin"
    argv = ["bake", str(mesh), "--out", str(tiled), "--auto-links", "on", "--tile-size", "128"]
    assert main([*argv, "--workers", "1"]) == 0
    count = int(capsys.readouterr().out.split("auto_links=")[1].split()[0])
    assert count == len(_bake().offmesh_links)
    assert sum(int(t.off_mesh_count) for t in read_navmesh_set(tiled).tiles) == count


def _nearest_same_kind(links, others) -> np.ndarray:
    """Per link, the distance to the nearest link of ``others`` of the same kind (the larger
    of the start and the end distance, in plan; a two-way link either way round, as agents
    use it). [Units: wu]"""
    out = []
    for i in range(len(links)):
        apart = np.maximum(
            np.linalg.norm(others.start[:, :2] - links.start[i, :2], axis=1),
            np.linalg.norm(others.end[:, :2] - links.end[i, :2], axis=1),
        )
        if links.bidirectional[i]:
            reversed_apart = np.maximum(
                np.linalg.norm(others.end[:, :2] - links.start[i, :2], axis=1),
                np.linalg.norm(others.start[:, :2] - links.end[i, :2], axis=1),
            )
            apart = np.minimum(apart, reversed_apart)
        apart[others.bidirectional != links.bidirectional[i]] = np.inf
        out.append(apart.min(initial=np.inf))
    return np.array(out)


def test_tiled_bake_finds_links_across_tile_borders_and_paths_take_them():
    """Tiles find the links landing in a neighbour too (on their link window): with tiles
    as big as the scene every solo link; with 32-cell tiles (a border runs along the ledge's
    foot and one through floor A) a link of the same kind within the link spacing of every
    solo link and none elsewhere; with 16-cell tiles (edges cut into 4.8 m pieces, so
    samples move) no link without a solo one nearby. Stored in the tiles, user ids unique,
    and a path crosses the gap through them."""
    from core import tiles
    from core.nav.query import NavMeshQuery

    from .test_offmesh_links import STRAIGHT_OFFMESH, single_path

    verts, tris = linkscenes.gap_and_ledge_scene()
    solo = _bake().offmesh_links
    whole = tiles.bake_tiled(verts, tris, ON, 128, workers=1)
    assert whole.auto_link_count == len(solo)
    spacing = float(ON.link_spacing)
    small = tiles.bake_tiled(verts, tris, ON, 32, workers=1)
    links = small.navmesh_links()
    assert not bool(links.bidirectional.all())  # the drops cross the border at y = 7.6
    assert (_nearest_same_kind(solo, links) < spacing).all()
    assert (_nearest_same_kind(links, solo) < spacing).all()
    smaller = tiles.bake_tiled(verts, tris, ON, 16, workers=1).navmesh_links()
    assert len(smaller) >= 0.8 * len(solo)
    assert (_nearest_same_kind(smaller, solo) < spacing).all()
    assert len(np.unique(links.user_id)) == len(links)
    assert sum(int(d.off_mesh_count) for d in small.navdata()) == len(links)
    query = NavMeshQuery(small.navmesh())
    path, straight, _ = single_path(query, linkscenes.ON_FLOOR_A, linkscenes.ON_FLOOR_B)
    assert any(int(f) & STRAIGHT_OFFMESH for f in np.asarray(straight.flags).tolist())
    path, straight, _ = single_path(query, linkscenes.ON_LEDGE, linkscenes.ON_FLOOR_A)
    assert any(int(f) & STRAIGHT_OFFMESH for f in np.asarray(straight.flags).tolist())
    plain = tiles.bake_tiled(verts, tris, NavConfig(), 32, workers=1)
    assert plain.auto_link_count == 0 and plain.navmesh_links() is None


@pytest.mark.parametrize("tile_size", [12, 18])
def test_tiled_links_from_a_ledge_along_a_tile_border(tile_size):
    """The ledge's navmesh edge lies on grid line 36 (y = 8.8), a tile border for 12- and
    18-cell tiles, where Recast makes it a portal of both tiles: the tiles still find every
    solo link (drops included) within the link spacing, and nothing else (where the floor
    goes on across a border there is no gap, so no link)."""
    from core import tiles

    verts, tris = linkscenes.gap_and_ledge_scene()
    solo = _bake()
    d = solo.config.derived()
    drops = solo.offmesh_links.start[~solo.offmesh_links.bidirectional]
    line = (drops[:, 1] - solo.bmin[1]) / d.cs
    assert np.allclose(line, 36) and 36 % tile_size == 0
    links = tiles.bake_tiled(verts, tris, ON, tile_size, workers=1).navmesh_links()
    spacing = float(ON.link_spacing)
    assert int((~links.bidirectional).sum()) >= len(drops) - 1
    assert (_nearest_same_kind(solo.offmesh_links, links) < spacing).all()
    assert (_nearest_same_kind(links, solo.offmesh_links) < spacing).all()


@pytest.mark.parametrize("tile_size", [16, 32])
def test_no_tiled_links_down_a_walkable_slope_across_tile_borders(tile_size):
    """A 30 degree ramp (walkable, 2 m down over 3.5 m): a solo bake has no edge on it, so no
    link. Tile borders cut it into portals; the floor goes on across them (the ground only
    falls away below climb height as the probes walk down the slope), so no link either.
    Before that was checked, every border across the ramp sent drop links down it."""
    from core import tiles

    n = 8
    grid = np.linspace(0.0, 16.0, n + 1, dtype=np.float32)
    x, y = np.meshgrid(grid, grid, indexing="ij")
    z = -np.tan(np.radians(30.0)) * x
    verts = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1).astype(np.float32)
    ids = np.arange((n + 1) * (n + 1)).reshape(n + 1, n + 1)
    a, b, c, d = ids[:-1, :-1], ids[1:, :-1], ids[1:, 1:], ids[:-1, 1:]
    tris = np.concatenate(
        [np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)]
    ).astype(np.int32)
    solo = pipeline.bake(verts, tris, ON)
    assert solo.polymesh.npolys > 0 and solo.auto_link_count == 0
    tiled = tiles.bake_tiled(verts, tris, ON, tile_size, workers=1)
    assert len(tiled.tiles) >= 4 and tiled.auto_link_count == 0


def test_a_border_edge_link_stays_where_the_neighbour_has_no_polygon_across():
    """Two platforms 1.74 m apart; with 24-cell tiles a border runs 0.5 m inside the far one,
    whose strip on the near tile gets no polygon: the near side's jump lands on that strip
    and fails to connect, so only the far tile's link from its border edge crosses the gap.
    Skipping border edges with walkable cells across (not polygons) lost it: no link, the far
    platform unreachable. A slope across a border is still linkless (the ramp test)."""
    from core import tiles
    from core.nav.query import NavMeshQuery

    from .test_offmesh_links import STRAIGHT_OFFMESH, single_path

    verts, tris = linkscenes.merge(
        linkscenes.box((0.0, 0.0, -1.0), (23.25, 28.15, 0.0)),
        linkscenes.box((11.763, 26.032, 0.0), (18.726, 29.032, 1.983)),
        linkscenes.box((20.47, 26.032, 0.0), (27.434, 29.032, 1.699)),
    )
    config = NavConfig(cell_height=0.1, auto_links=True, max_jump_distance=6.0, max_drop=5.0)
    near, far = (16.0, 27.45, 2.0), (24.0, 27.45, 1.7)
    for tile_size in (24, 64):
        bake = tiles.bake_tiled(verts, tris, config, tile_size, workers=1)
        links = bake.navmesh_links()
        jumps = links.start[links.bidirectional]
        assert len(jumps) >= 1
        path, straight, _ = single_path(NavMeshQuery(bake.navmesh()), near, far)
        assert not path.status & 0x40  # not partial
        assert any(int(f) & STRAIGHT_OFFMESH for f in np.asarray(straight.flags).tolist())


def _link_arrays(bake) -> np.ndarray:
    links = bake.navmesh_links()
    return np.column_stack([links.start, links.end, links.bidirectional])


def test_link_windows_end_where_the_triangles_do(monkeypatch):
    """A 1000 wu max_jump_distance on the 26 m gap scene: every tile's link window spans the
    scene and a little (it spanned 6,700 cells, 1.3 GB per tile), and the links are those of
    a 30 wu reach up to the half-cell probe step (the window's corner moved: a probe exactly
    on a cell line may fall in the next column). Up to `WINDOW_EXACT_MARGIN` only the high
    sides are cropped, which changes no link: the same arrays as uncropped windows."""
    from core import tiles

    verts, tris = linkscenes.gap_and_ledge_scene()
    far = NavConfig(auto_links=True, max_jump_distance=1000.0)
    plan = tiles.plan_tiles(verts, tris, far, 32)
    extent = np.ceil((verts[:, :2].max(axis=0) - verts[:, :2].min(axis=0)) / 0.3)
    for ty in range(plan.grid.tiles_h):
        for tx in range(plan.grid.tiles_w):
            window = plan.link_window(tx, ty)
            assert window.width <= extent[0] + 32 + 2 * (tiles.WINDOW_SLACK_CELLS + 1)
            assert window.height <= extent[1] + 32 + 2 * (tiles.WINDOW_SLACK_CELLS + 1)
    near = NavConfig(auto_links=True, max_jump_distance=30.0)
    assert tiles.link_margin(near, near.derived()) <= tiles.WINDOW_EXACT_MARGIN
    reach_30 = _link_arrays(tiles.bake_tiled(verts, tris, near, 32, workers=1))
    reach_1000 = _link_arrays(tiles.bake_tiled(verts, tris, far, 32, workers=1))
    assert reach_1000.shape == reach_30.shape
    np.testing.assert_array_equal(reach_1000[:, :3], reach_30[:, :3])
    assert np.abs(reach_1000 - reach_30).max() <= 0.5 * 0.3 + 1e-5
    margin = tiles.link_margin(near, near.derived())
    monkeypatch.setattr(tiles, "window_reach", lambda *a: (np.full(2, margin), np.full(2, margin)))
    uncropped = _link_arrays(tiles.bake_tiled(verts, tris, near, 32, workers=1))
    np.testing.assert_array_equal(uncropped, reach_30)


def test_tiled_links_landing_on_a_removed_region_are_dropped(monkeypatch):
    """A 2.4 m platform across the gap: erosion leaves it 16 cells, under the smallest
    region, so Recast removes it and a solo bake has no link to it. The tile holding the
    gap's near side sees walkable floor there on its link window; the landing check on the
    assembled navmesh drops that link (and without the check it would be kept)."""
    from core import tiles

    verts, tris = linkscenes.merge(
        linkscenes.box((0.0, 0.0, -1.0), (10.0, 8.0, 0.0)),
        linkscenes.box((11.5, 3.0, -1.0), (13.9, 5.4, 0.0)),
        linkscenes.box((-2.0, -2.0, -11.0), (24.0, 16.0, -10.0)),
    )
    solo = pipeline.bake(verts, tris, ON)
    assert solo.offmesh_links is None or len(solo.offmesh_links) == 0
    # 41-cell tiles: a tile border at x = 10.3, in the gap.
    checked = tiles.bake_tiled(verts, tris, ON, 41, workers=1)
    assert checked.auto_link_count == 0
    # Nor in the Detour tiles (the tile's data, made before the check, kept the link when it
    # was the bake's only one: the .bin held it).
    assert sum(int(data.off_mesh_count) for data in checked.navdata()) == 0
    assert sum(int(data.off_mesh_count) for data in checked.navmesh().tiles) == 0
    monkeypatch.setattr(tiles, "check_link_landings", lambda bake: 0)
    unchecked = tiles.bake_tiled(verts, tris, ON, 41, workers=1)
    assert unchecked.auto_link_count > 0


def test_chunked_work_gives_the_same_links(scene_bake, monkeypatch):
    from core import jumplinks

    result = scene_bake
    d = result.config.derived()
    kwargs = dict(
        agent_height=float(d.walkable_height * d.ch),
        agent_radius=0.6,
        agent_climb=float(d.walkable_climb * d.ch),
        max_drop=3.0,
        max_jump_distance=3.5,
        spacing=1.0,
    )
    args = (result.polymesh, result.detail, result.compact, result.heightfield)
    whole = find_auto_links(*args, **kwargs)
    monkeypatch.setattr(jumplinks, "CHUNK_PROBES", 50)  # a few samples / links per chunk
    chunked = find_auto_links(*args, **kwargs)
    assert len(whole) > 0
    for name in ("start", "end", "bidirectional"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name))


def test_probes_stop_at_the_grid_s_far_corner(monkeypatch):
    # A max_jump_distance of 100 km probed every step of it (nav_test: 11.7 s against 0.5
    # s); no probe lands past the grid's far corner, so the links are those of 500 wu.
    from core import jumplinks, pipeline
    from core.config import NavConfig
    from core.objio import read_obj

    from .refdata import mesh_path

    verts, tris = read_obj(mesh_path("nav_test"))
    probes = []
    first_landing = jumplinks._first_landing

    def counted(chf, hf, point, out, z0, dist, *rest):
        probes.append((dist.shape[0], float(np.hypot(chf.width, chf.height) * chf.cs)))
        return first_landing(chf, hf, point, out, z0, dist, *rest)

    monkeypatch.setattr(jumplinks, "_first_landing", counted)
    far = pipeline.bake(verts, tris, NavConfig(auto_links=True, max_jump_distance=1e5))
    near = pipeline.bake(verts, tris, NavConfig(auto_links=True, max_jump_distance=500.0))
    assert probes and all(
        n * jumplinks.STEP_CELLS * 0.3 <= reach + 2 * jumplinks.STEP_CELLS * 0.3
        for n, reach in probes
    )
    assert len(far.offmesh_links) == len(near.offmesh_links) > 0
    for name in ("start", "end", "radius", "bidirectional"):
        assert np.array_equal(getattr(far.offmesh_links, name), getattr(near.offmesh_links, name))


def _link_kwargs(result, spacing):
    d = result.config.derived()
    return dict(
        agent_height=float(d.walkable_height * d.ch),
        agent_radius=0.6,
        agent_climb=float(d.walkable_climb * d.ch),
        max_drop=3.0,
        max_jump_distance=3.5,
        spacing=spacing,
    )


def test_too_many_link_samples_are_refused_naming_link_spacing(scene_bake, monkeypatch):
    # link_spacing 1e-5 on dungeon made 60 million samples (MemoryError at 5.5 GB): refused
    # before any sample is made, with a spacing that fits; the bake's stage says the same.
    from core import jumplinks

    monkeypatch.setattr(jumplinks, "MAX_LINK_SAMPLES", 1000)
    args = (scene_bake.polymesh, scene_bake.detail, scene_bake.compact, scene_bake.heightfield)
    with pytest.raises(VoxNavError, match=r"link_spacing 0\.01 .* 1,000 .*link_spacing >= 0\.1"):
        find_auto_links(*args, **_link_kwargs(scene_bake, 0.01))
    assert len(find_auto_links(*args, **_link_kwargs(scene_bake, 0.2))) > 0  # fits: baked
    with pytest.raises(VoxNavError, match="link_spacing"):
        _bake(NavConfig(auto_links=True, link_spacing=0.01))


def test_too_many_link_probes_are_refused_naming_both_settings(scene_bake, monkeypatch):
    # link_spacing 0.001 with max_jump_distance 100000 on a 150 m plane: 2.5 billion probes,
    # 75 s frozen in Blender, no link found (each alone was quick).
    from core import jumplinks

    args = (scene_bake.polymesh, scene_bake.detail, scene_bake.compact, scene_bake.heightfield)
    kwargs = _link_kwargs(scene_bake, 0.5)
    probes = jumplinks.MAX_LINK_PROBES
    monkeypatch.setattr(jumplinks, "MAX_LINK_PROBES", 2000)
    with pytest.raises(VoxNavError, match=r"would probe .* raise link_spacing or lower max_jump"):
        find_auto_links(*args, **kwargs)
    monkeypatch.setattr(jumplinks, "MAX_LINK_PROBES", probes)
    assert len(find_auto_links(*args, **kwargs)) > 0


def test_link_samples_are_made_a_chunk_at_a_time(scene_bake, monkeypatch):
    # Memory follows the links found, not the samples: 168,000 samples (link_spacing 1 mm)
    # held about 150 bytes each at once before (1 GB on dungeon at 1e-4).
    import tracemalloc

    from core import jumplinks

    monkeypatch.setattr(jumplinks, "CHUNK_PROBES", 1 << 14)
    args = (scene_bake.polymesh, scene_bake.detail, scene_bake.compact, scene_bake.heightfield)
    tracemalloc.start()
    try:
        links = find_auto_links(*args, **_link_kwargs(scene_bake, 1e-3))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(links) > 10_000
    assert peak < 20 * 1024**2, peak  # 14 MB (34 MB before)


@pytest.mark.parametrize("spacing", [2.0, 3.0])
def test_a_gap_shorter_than_the_spacing_gets_jumps_from_both_sides(spacing):
    """A 1 m gap (jumps about 2.5 m long) with link_spacing 3: the deduplication took a jump
    and its reverse from the other side for near-duplicates (each one's start near the
    other's end) and left one side with none."""
    box, merge = linkscenes.box, linkscenes.merge
    verts, tris = merge(box((0, 0, -1), (6, 6, 0)), box((7, 0, -1), (13, 6, 0)))
    result = pipeline.bake(verts, tris, NavConfig(auto_links=True, link_spacing=spacing))
    start, end = result.offmesh_links.start, result.offmesh_links.end
    a_to_b = int(((start[:, 0] < 6.5) & (end[:, 0] > 6.5)).sum())
    b_to_a = int(((start[:, 0] > 6.5) & (end[:, 0] < 6.5)).sum())
    assert a_to_b > 0 and b_to_a == a_to_b


def test_links_detour_would_not_keep_are_left_out_and_said(tmp_path):
    """agent_max_climb below one cell height: the links (on the voxel floor, a cell height
    under the surface) were counted, drawn and written to the JSON, while Detour stored none
    of them, silently. Now they are left out, with a warning; with a climb of a cell height
    or more they stay."""
    from core.nav.navdata import create_nav_mesh_data

    box, merge = linkscenes.box, linkscenes.merge
    verts, tris = merge(box((0, 0, -1), (6, 6, 0)), box((7, 0, -1), (13, 6, 0)))
    for climb, expect_links in ((0.0, False), (0.1, False), (0.9, True)):
        config = NavConfig(auto_links=True, agent_max_climb=climb)
        result = pipeline.bake(verts, tris, config)
        links = result.offmesh_links
        data = create_nav_mesh_data(
            result.polymesh, result.detail, walkable_height=config.agent_height,
            walkable_radius=config.agent_radius, walkable_climb=config.agent_max_climb,
            offmesh=links,
        )  # fmt: skip
        assert int(data.off_mesh_count) == len(links) == result.auto_link_count
        assert result.counts["auto_links"] == len(links)
        assert (len(links) > 0) == expect_links, climb
        warned = any("automatic link(s) left out" in w for w in result.warnings)
        assert warned == (not expect_links), climb


def test_tiled_bakes_leave_out_the_links_detour_would_not_keep():
    """The solo rule above, in tiles and the tile cache: with agent_max_climb below one cell
    height every automatic link was counted, drawn and written, and missing from the .bin."""
    from core import tiles
    from core.tilecache import TileCache

    box, merge = linkscenes.box, linkscenes.merge
    verts, tris = merge(box((0, 0, -1), (6, 6, 0)), box((7, 0, -1), (13, 6, 0)))
    for climb, expect_links in ((0.1, False), (0.9, True)):
        config = NavConfig(auto_links=True, agent_max_climb=climb)
        bake = tiles.bake_tiled(verts, tris, config, 16, workers=1)
        links = bake.navmesh_links()
        stored = sum(int(data.off_mesh_count) for data in bake.navdata())
        assert stored == bake.auto_link_count == (0 if links is None else len(links))
        assert (bake.auto_link_count > 0) == expect_links, climb
        warned = any("automatic link(s) left out" in w for w in bake.warnings)
        assert warned == (not expect_links), climb
        cache = TileCache.build(verts, tris, config, 16, workers=1)
        cached = 0 if cache.auto_links is None else len(cache.auto_links)
        assert cached == bake.auto_link_count
        assert any("automatic link(s) left out" in w for w in cache.warnings) == warned


def test_dump_writes_the_automatic_links(tmp_path):
    """`dump --auto-links on` wrote no link arrays: now links_* (Recast's frame), solo and
    tiled, equal to the bake's own links."""
    from core import tiles
    from core.__main__ import main

    box, merge = linkscenes.box, linkscenes.merge
    verts, tris = merge(box((0, 0, -1), (6, 6, 0)), box((7, 0, -1), (13, 6, 0)))
    mesh = linkscenes.write_obj(tmp_path / "gap.obj", verts, tris)
    config = NavConfig(auto_links=True)
    solo = pipeline.bake(verts, tris, config).offmesh_links
    tiled = tiles.bake_tiled(verts, tris, config, 16, workers=1).navmesh_links()
    for extra, links in (([], solo), (["--tile-size", "16", "--workers", "1"], tiled)):
        out = tmp_path / "dump.npz"
        assert main(["dump", str(mesh), "--auto-links", "on", "--out", str(out), *extra]) == 0
        with np.load(out) as data:
            assert int(data["count_links"]) == int(data["count_auto_links"]) == len(links) > 0
            np.testing.assert_array_equal(data["links_start"], links.start[:, [0, 2, 1]])
            np.testing.assert_array_equal(data["links_end"], links.end[:, [0, 2, 1]])
            np.testing.assert_array_equal(data["links_bidir"], links.bidirectional)
    out = tmp_path / "plain.npz"
    assert main(["dump", str(mesh), "--out", str(out)]) == 0
    with np.load(out) as data:
        assert int(data["count_links"]) == 0 and data["links_start"].shape == (0, 3)


@pytest.mark.parametrize(
    "name, value",
    [("max_jump_distance", float("nan")), ("max_jump_distance", float("inf")),
     ("max_drop", -0.5), ("agent_height", "tall")],
)  # fmt: skip
def test_find_auto_links_refuses_bad_settings_in_one_line(name, value):
    """Called directly (not through NavConfig), NaN or infinity failed with a bare
    'cannot convert float NaN to integer' deep inside (a helper)."""
    from core.jumplinks import find_auto_links

    verts, tris = linkscenes.gap_and_ledge_scene()
    result = pipeline.bake(verts, tris, NavConfig())
    settings = dict(agent_height=2.0, agent_radius=0.6, agent_climb=0.9, max_drop=4.0,
                    max_jump_distance=3.5, spacing=1.0)  # fmt: skip
    settings[name] = value
    with pytest.raises(VoxNavError, match=f"{name} must be a finite number >= 0"):
        find_auto_links(result.polymesh, result.detail, result.compact, result.heightfield,
                        **settings)  # fmt: skip


def test_an_arc_crossing_a_column_corner_is_checked_in_the_columns_beside_it():
    """Between two steps in diagonal columns the line crosses one of the two columns beside
    their shared corner: the arc was checked in the steps' columns only, and a drop passed
    through a solid corner column (a helper: 2 to 94 cells deep in 5 of 800 rotated
    scenes)."""
    from core.jumplinks import _arc_clear

    floor = linkscenes.box((0.0, 0.0, -1.0), (4.0, 4.0, 0.0))
    pillar = linkscenes.box((2.05, 2.05, 0.0), (2.35, 2.35, 3.0))  # column (5, 5), cell 0.4
    verts, tris = linkscenes.merge(floor, pillar)
    config = NavConfig(cell_size=0.4)
    hf = pipeline.bake(verts, tris, config, stop_after="heightfield").heightfield
    top = -1.0 + float(hf.smax[int(hf.col_start[1]) - 1]) * float(hf.ch)  # the floor's spans
    # From column (4, 5) to column (5, 4): the line x + y = 4.1 crosses column (5, 5).
    start, end = np.array([[1.95, 2.15, top]]), np.array([[2.15, 1.95, top]])
    assert not _arc_clear(hf, start, end, 2.0, 0.0, 1)[0]
    # From column (4, 4) to (5, 3): the columns beside that corner hold floor only.
    start, end = np.array([[1.95, 1.75, top]]), np.array([[2.15, 1.55, top]])
    assert _arc_clear(hf, start, end, 2.0, 0.0, 1)[0]


def test_a_links_clearance_does_not_depend_on_the_other_links():
    """One step count for a whole batch (its longest link's): a pillar 4 m away gave four
    drops off a ledge that were not found without it, and 48- and 64-cell tiles found none
    (a helper). Each link is now checked at its own step count."""
    config = NavConfig(cell_size=0.1, cell_height=0.05, agent_radius=0.0, agent_height=2.21,
                       agent_max_climb=0.641, auto_links=True, max_drop=7.495,
                       max_jump_distance=1.562, link_spacing=0.3568)  # fmt: skip
    ground = linkscenes.box((-2.0, -2.0, -21.0), (15.9743, 4.3096, -20.0))
    pillar = linkscenes.box((8.0716, 0.0168, -20.0), (8.7517, 0.6969, 4.4399))
    step1 = linkscenes.box((2.9098, 3.5096, 2.471), (4.4098, 3.9096, 5.5013))
    step2 = linkscenes.box((2.9098, 3.9096, 2.471), (4.4098, 4.3096, 6.0089))
    ledge = linkscenes.box((0.1583, 0.4621, 2.471), (6.4066, 3.5238, 7.7789))

    def ledge_drops(*parts):
        links = pipeline.bake(*linkscenes.merge(*parts), config).offmesh_links
        high = links.start[:, 2] > 7
        return np.column_stack([links.start[high], links.end[high]])

    alone = ledge_drops(ground, step1, step2, ledge)
    np.testing.assert_array_equal(ledge_drops(ground, pillar, step1, step2, ledge), alone)
