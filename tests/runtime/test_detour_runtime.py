"""VoxNav's Detour .bin loaded by the real Detour: npm ``recast-navigation`` (a WebAssembly build
of recastnavigation) run by node (``detour_queries.mjs``).

The dungeon is baked in Recast's frame, written as a navmesh set, loaded with ``importNavMesh``,
and queried exactly as ``../shared/reference/dungeon_queries.npz`` was made with native Detour
(findNearestPoly, getPolyHeight, findPath, findStraightPath, raycast): every status, polygon,
corridor, flag and position must equal the reference. The same navmesh written in the engine
frame (x, z, -y), queried with mirrored points, must give the same polygons and mirrored points.

Needs node and ``npm ci --prefix tests/runtime`` (``.ci/run`` does it); skips without them on a
developer machine, fails under CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from core import pipeline
from core.config import NavConfig
from core.export import write_detour_bin
from core.objio import read_obj

from ..conftest import require_shared

RUNTIME = Path(__file__).resolve().parent
SCRIPT = RUNTIME / "detour_queries.mjs"
F32 = np.float32
SUCCESS = 0x40000000
BUFFER_TOO_SMALL = 0x10


def require_node() -> str:
    """The node executable with recast-navigation installed; skip (fail under CI) if not."""
    node = shutil.which("node")
    if node is None:
        problem = "node is not installed (the real-Detour test runs recast-navigation in node)"
    elif not (RUNTIME / "node_modules" / "recast-navigation" / "package.json").exists():
        problem = f"recast-navigation is not installed: run npm ci --prefix {RUNTIME}"
    else:
        return node
    if os.environ.get("CI"):
        pytest.fail(problem)
    pytest.skip(problem)


def run_detour(bin_path: Path, points, pairs, rays, half_extents, tmp_path: Path) -> dict:
    node = require_node()
    spec = {
        "bin": str(bin_path),
        "half_extents": [float(v) for v in half_extents],
        "points": np.asarray(points, dtype=np.float64).tolist(),
        "pairs": np.asarray(pairs, dtype=np.int64).tolist(),
        "rays": [[int(s), [float(v) for v in end]] for s, end in rays],
        "max_nodes": 2048,
    }
    spec_path = tmp_path / "queries.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.run(
        [node, str(SCRIPT), str(spec_path)], cwd=RUNTIME, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.fail(f"node {SCRIPT.name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def reference():
    with np.load(require_shared("reference/dungeon_queries.npz")) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def dungeon_bake():
    verts, tris = read_obj(require_shared("meshes/dungeon.obj"), recast_frame=True)
    result = pipeline.bake(verts, tris, NavConfig())
    assert result.polymesh is not None and result.detail is not None
    return result


def write_bin(result, path: Path, frame: str) -> Path:
    cfg = result.config
    write_detour_bin(
        path, result.polymesh, result.detail, agent_height=cfg.agent_height,
        agent_radius=cfg.agent_radius, agent_max_climb=cfg.agent_max_climb, frame=frame,
    )  # fmt: skip
    return path


def reference_queries(q):
    rays = list(zip(q["q_ray_start"].tolist(), q["q_ray_end"], strict=True))
    return q["q_points"], q["q_pairs"], rays, q["q_half_extents"]


@pytest.fixture(scope="module")
def detour_answers(dungeon_bake, reference, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("detour")
    path = write_bin(dungeon_bake, tmp / "dungeon.bin", "recast")
    return run_detour(path, *reference_queries(reference), tmp)


def poly_index(entry) -> int:
    return int(entry[1])


def test_loads_one_tile(detour_answers, dungeon_bake):
    assert detour_answers["tiles"] == [
        {"index": 0, "x": 0, "y": 0, "polys": int(dungeon_bake.polymesh.npolys)}
    ]


def test_nearest_poly_and_height_equal_native_detour(detour_answers, reference):
    q = reference
    near = detour_answers["near"]
    assert [n["status"] for n in near] == q["near_status"].tolist()
    assert [poly_index(n["poly"]) for n in near] == q["near_poly"].tolist()
    found = q["near_poly"] >= 0
    assert found.sum() > 300
    pts = np.array([n["pt"] for n, f in zip(near, found, strict=True) if f], dtype=np.float64)
    np.testing.assert_array_equal(pts.astype(F32), q["near_pt"][found])
    over = [n["over"] for n, f in zip(near, found, strict=True) if f]
    assert over == q["near_over_poly"][found].tolist()
    heights = [n["height"] for n, f in zip(near, found, strict=True) if f]
    statuses = [n["height_status"] for n, f in zip(near, found, strict=True) if f]
    assert statuses == q["height_status"][found].tolist()
    np.testing.assert_array_equal(np.array(heights, dtype=F32), q["height"][found])


def test_paths_equal_native_detour(detour_answers, reference):
    q = reference
    paths = detour_answers["paths"]
    assert [p["status"] for p in paths] == q["path_status"].tolist()
    for j, p in enumerate(paths):
        start, count = int(q["path_start"][j]), int(q["path_count"][j])
        assert [poly_index(e) for e in p["polys"]] == q["path_poly"][start : start + count].tolist()
        if count == 0:
            assert "straight_status" not in p
            continue
        assert p["straight_status"] == int(q["straight_status"][j])
        np.testing.assert_array_equal(F32(p["straight_end"]), q["straight_end_pos"][j])
        s, n = int(q["straight_start"][j]), int(q["straight_count"][j])
        assert len(p["straight_pts"]) == n, f"pair {j}"
        np.testing.assert_array_equal(
            np.array(p["straight_pts"], dtype=np.float64).reshape(-1, 3).astype(F32),
            q["straight_pts"][s : s + n],
        )
        assert p["straight_flags"] == q["straight_flags"][s : s + n].tolist()
        refs = [poly_index(e) if e[0] >= 0 else -1 for e in p["straight_polys"]]
        assert refs == q["straight_poly"][s : s + n].tolist()
    assert sum(1 for p in paths if p["status"] == SUCCESS) > 200


def test_raycasts_equal_native_detour(detour_answers, reference):
    q = reference
    rays = detour_answers["rays"]
    # recast-navigation's raycast gives Detour no buffer for the visited polygons, so Detour
    # adds DT_BUFFER_TOO_SMALL (0x10) to the status; t and the normal are unaffected.
    assert all(r["status"] & BUFFER_TOO_SMALL for r in rays)
    assert [r["status"] & ~BUFFER_TOO_SMALL for r in rays] == q["ray_status"].tolist()
    np.testing.assert_array_equal(np.array([r["t"] for r in rays], dtype=F32), q["ray_t"])
    normals = np.array([r["normal"] for r in rays], dtype=np.float64).astype(F32)
    np.testing.assert_array_equal(normals, q["ray_normal"])


def test_engine_frame_file_gives_the_mirrored_answers(dungeon_bake, reference, tmp_path):
    """The engine-frame .bin (x, z, -y) is the same navmesh mirrored: mirrored queries find the
    same polygons and corridors, and mirrored points."""
    q = reference
    path = write_bin(dungeon_bake, tmp_path / "engine.bin", "engine")
    flip = np.array([1, 1, -1], dtype=F32)
    points, pairs, rays, half = reference_queries(q)
    rays = [(s, end * flip) for s, end in rays]
    got = run_detour(path, points * flip, pairs, rays, half, tmp_path)
    near = got["near"]
    assert [poly_index(n["poly"]) for n in near] == q["near_poly"].tolist()
    found = q["near_poly"] >= 0
    pts = np.array([n["pt"] for n, f in zip(near, found, strict=True) if f]) * flip
    np.testing.assert_allclose(pts, q["near_pt"][found], rtol=0, atol=1e-4)
    same = 0
    for j, p in enumerate(got["paths"]):
        start, count = int(q["path_start"][j]), int(q["path_count"][j])
        corridor = [poly_index(e) for e in p["polys"]]
        same += corridor == q["path_poly"][start : start + count].tolist()
        assert p["status"] == int(q["path_status"][j])
        if count:
            s, n = int(q["straight_start"][j]), int(q["straight_count"][j])
            assert p["straight_flags"] == q["straight_flags"][s : s + n].tolist()
            mirrored = np.array(p["straight_pts"], dtype=np.float64).reshape(-1, 3) * flip
            np.testing.assert_allclose(mirrored, q["straight_pts"][s : s + n], rtol=0, atol=1e-4)
    assert same == len(got["paths"])


def tile_poly(entry, tiles) -> list[int]:
    """(tile x, tile y, polygon index) of a node answer's (tile slot, polygon index)."""
    if entry[0] < 0:
        return [-1, -1, -1]
    tile = tiles[entry[0]]
    return [tile["x"], tile["y"], int(entry[1])]


def test_tiled_navmesh_equals_native_detour(tmp_path):
    """The tiled reference's 41 tiles (portal edges between tiles) written as one navmesh set
    with RecastDemo's tile-mesh params: Detour links the tiles on load and answers the tiled
    reference's queries exactly as native Detour did."""
    from core.nav import binio

    from ..core.refdata import load_reference, ref_tiled_tiles

    q = load_reference("dungeon_tiled")
    tiles, params = ref_tiled_tiles()
    path = tmp_path / "tiled.bin"
    binio.write_navmesh_set(path, tiles, params)
    got = run_detour(path, *reference_queries(q), tmp_path)
    slots = {t["index"]: t for t in got["tiles"]}
    assert len(slots) == len(tiles)
    near = got["near"]
    assert [n["status"] for n in near] == q["near_status"].tolist()
    assert [tile_poly(n["poly"], slots) for n in near] == q["near_tile_poly"].tolist()
    found = q["near_poly"] >= 0
    pts = np.array([n["pt"] for n, f in zip(near, found, strict=True) if f], dtype=np.float64)
    np.testing.assert_array_equal(pts.astype(F32), q["near_pt"][found])
    paths = got["paths"]
    assert [p["status"] for p in paths] == q["path_status"].tolist()
    crossing = 0
    for j, p in enumerate(paths):
        start, count = int(q["path_start"][j]), int(q["path_count"][j])
        corridor = [tile_poly(e, slots) for e in p["polys"]]
        assert corridor == q["path_tile_poly"][start : start + count].tolist(), f"pair {j}"
        crossing += len({tuple(c[:2]) for c in corridor}) > 1
        if count:
            s, n = int(q["straight_start"][j]), int(q["straight_count"][j])
            got_pts = np.array(p["straight_pts"], dtype=np.float64).reshape(-1, 3).astype(F32)
            np.testing.assert_array_equal(got_pts, q["straight_pts"][s : s + n])
            assert p["straight_flags"] == q["straight_flags"][s : s + n].tolist()
    assert crossing > 50  # many corridors cross tile borders


# ------------------------------------------------------------------------ off-mesh links (#15)
def link_scene_answers(nav, points, pairs):
    """VoxNav's own answers on a navmesh, shaped like detour_queries.mjs's (Y-up points)."""
    from core.nav.query import PARTIAL_RESULT, NavMeshQuery

    q = NavMeshQuery(nav)
    zup = np.asarray(points, dtype=F32)[:, [0, 2, 1]]
    near = [q.find_nearest_poly(p, (2.0, 2.0, 4.0)) for p in zup]
    out = []
    for a, b in pairs:
        path = q.find_path(near[a].ref, near[b].ref, near[a].point, near[b].point)
        end = near[b].point
        if path.status & PARTIAL_RESULT:
            end = q.closest_point_on_poly(int(path.polys[-1]), end)[1]
        sp = q.find_straight_path(near[a].point, end, path.polys)
        tp = nav.tile_poly(path.polys)
        out.append(
            {
                "status": path.status,
                "polys": [[int(nav.tile_at(x, y)), int(i)] for x, y, i in tp.tolist()],
                "straight_status": sp.status,
                "straight_pts": sp.points[:, [0, 2, 1]],
                "straight_flags": sp.flags.tolist(),
            }
        )
    return out


def assert_same_paths(got, ours):
    for j, (p, o) in enumerate(zip(got["paths"], ours, strict=True)):
        assert p["status"] == o["status"], f"pair {j}"
        assert p["polys"] == o["polys"], f"pair {j}"
        assert p["straight_status"] == o["straight_status"], f"pair {j}"
        assert p["straight_flags"] == o["straight_flags"], f"pair {j}"
        np.testing.assert_array_equal(
            np.array(p["straight_pts"], dtype=np.float64).reshape(-1, 3).astype(F32),
            o["straight_pts"],
        )


LINK_PAIRS = [(0, 1), (1, 0), (2, 1), (1, 2), (0, 2), (2, 0)]


def link_scene_links():
    """A two-way link over the gap, a one-way drop off the ledge (from the linkscenes)."""
    from core.offmesh import OffMeshLinks

    return OffMeshLinks.create(
        [(9.5, 4.0, 0.0), (5.0, 8.5, 2.0)], [(12.0, 4.0, 0.0), (5.0, 7.0, 0.0)], 0.6,
        [True, False],
    )  # fmt: skip


def link_scene_points():
    from ..core import linkscenes as L

    return np.array([L.ON_FLOOR_A, L.ON_FLOOR_B, L.ON_LEDGE], dtype=F32)[:, [0, 2, 1]]


@pytest.mark.parametrize("frame", ["recast", "engine"])
def test_offmesh_links_load_and_are_followed_by_native_detour(tmp_path, frame):
    """The gap-and-ledge scene with a two-way gap link and a one-way drop link, written as a
    .bin: the real Detour loads the dtOffMeshConnections, its paths cross the gap and drop off
    the ledge (never climb it), and every corridor, straight-path point and flag (0x04 at the
    link starts) equals VoxNav's own queries on the file it reads back."""
    from core.nav import binio
    from core.nav.navmesh import NavMesh

    from ..core import linkscenes as L

    verts, tris = L.gap_and_ledge_scene()
    result = pipeline.bake(verts, tris, NavConfig())
    cfg = result.config
    path = tmp_path / f"links_{frame}.bin"
    write_detour_bin(
        path, result.polymesh, result.detail, agent_height=cfg.agent_height,
        agent_radius=cfg.agent_radius, agent_max_climb=cfg.agent_max_climb, frame=frame,
        offmesh=link_scene_links(),
    )  # fmt: skip
    points = link_scene_points()
    if frame == "engine":
        points = points * np.array([1, 1, -1], dtype=F32)
    got = run_detour(path, points, LINK_PAIRS, [], (2.0, 4.0, 2.0), tmp_path)
    statuses = [p["status"] for p in got["paths"]]
    partial = SUCCESS | 0x40  # up the ledge: the drop link is one-way
    assert statuses == [SUCCESS, SUCCESS, SUCCESS, partial, partial, SUCCESS]
    assert 4 in got["paths"][0]["straight_flags"] and 4 in got["paths"][2]["straight_flags"]
    assert max(pt[1] for pt in got["paths"][3]["straight_pts"]) < 1.0  # never up the ledge
    read = binio.read_navmesh_set(path)
    assert read.tiles[0].off_mesh_count == 2
    nav = NavMesh(read.params)
    nav.add_tile(read.tiles[0])
    assert_same_paths(got, link_scene_answers(nav, points, LINK_PAIRS))


def test_offmesh_links_across_tiles_equal_native_detour(tmp_path):
    """Tiled (tile_size 40 cells = 12 wu): the gap link starts in one tile and ends in the
    next (connectExtOffMeshLinks). Detour's answers equal VoxNav's on the same tiles."""
    from core.nav import binio
    from core.nav.navmesh import NavMesh
    from core.offmesh import OffMeshLinks
    from core.tiles import bake_tiled

    from ..core import linkscenes as L

    verts, tris = L.gap_and_ledge_scene()
    bake = bake_tiled(verts, tris, NavConfig(), 40, workers=1)
    bake.offmesh_links = OffMeshLinks.create(
        [(9.5, 4.0, 0.0), (5.0, 10.5, 2.0)], [(12.0, 4.0, 0.0), (5.0, 7.0, 0.0)], 0.6,
        [True, False],
    )  # fmt: skip
    tiles = bake.navdata()
    assert sum(t.off_mesh_count for t in tiles) == 2
    assert any(t.off_mesh_count and (t.off_mesh_side != 0xFF).any() for t in tiles)
    params = bake.navmesh_params()
    path = tmp_path / "tiled_links.bin"
    binio.write_navmesh_set(path, tiles, params)
    got = run_detour(path, link_scene_points(), LINK_PAIRS, [], (2.0, 4.0, 2.0), tmp_path)
    assert [p["status"] for p in got["paths"]][:3] == [SUCCESS] * 3
    nav = NavMesh(params)
    for tile in binio.read_navmesh_set(path).tiles:
        nav.add_tile(tile)
    assert_same_paths(got, link_scene_answers(nav, link_scene_points(), LINK_PAIRS))
