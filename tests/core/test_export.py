"""Navmesh export (core.export): OBJ and JSON writers, JSON round trip, bad input."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from core.detail import build_poly_mesh_detail
from core.errors import VoxNavError
from core.export import navmesh_to_dict, read_navmesh_json, write_json, write_obj

from .refdata import MESHES, load_reference, ref_compact
from .test_detail import ref_polymesh


@pytest.fixture(scope="module", params=MESHES)
def navmesh(request):
    ref = load_reference(request.param)
    pmesh = ref_polymesh(ref)
    dmesh = build_poly_mesh_detail(
        pmesh, ref_compact(ref), ref["cfg_detailSampleDist"], ref["cfg_detailSampleMaxError"]
    )
    return pmesh, dmesh


def read_obj_objects(path):
    """Tiny OBJ parser: {object name: (vertices (n,3) float, faces [list of 1-based ids])}."""
    verts, objects, current = [], {}, None
    for line in path.read_text().splitlines():
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if parts[0] == "o":
            current = parts[1]
            objects[current] = []
        elif parts[0] == "v":
            verts.append([float(p) for p in parts[1:4]])
        elif parts[0] == "f":
            objects[current].append([int(p.split("/")[0]) for p in parts[1:]])
    return np.array(verts), objects


def test_obj_faces_and_axes(navmesh, tmp_path):
    pmesh, dmesh = navmesh
    path = tmp_path / "navmesh.obj"
    write_obj(path, pmesh, dmesh)
    verts, objects = read_obj_objects(path)
    counts = (pmesh.polys[:, : pmesh.nvp] != 0xFFFF).sum(axis=1)
    assert set(objects) == {"navmesh", "detail"}
    assert len(objects["navmesh"]) == pmesh.polys.shape[0]
    assert sorted(len(f) for f in objects["navmesh"]) == sorted(counts.tolist())
    assert len(objects["detail"]) == dmesh.ntris
    assert verts.shape[0] == pmesh.verts.shape[0] + dmesh.nverts
    # Y-up (x, z, -y): the detail vertices read back are the Z-up ones rotated.
    back = verts[pmesh.verts.shape[0] :]
    np.testing.assert_allclose(back[:, 0], dmesh.verts[:, 0], atol=1e-5)
    np.testing.assert_allclose(back[:, 1], dmesh.verts[:, 2], atol=1e-5)
    np.testing.assert_allclose(back[:, 2], -dmesh.verts[:, 1], atol=1e-5)
    # Every face faces up (+Y): Newell normal's y component is positive.
    for name in ("navmesh", "detail"):
        for face in objects[name]:
            p = verts[np.array(face) - 1]
            q = np.roll(p, -1, axis=0)
            ny = np.sum((p[:, 2] - q[:, 2]) * (p[:, 0] + q[:, 0]))
            assert ny > 0, f"{name} face {face} faces down"


def test_obj_and_json_of_a_recast_frame_bake_lie_over_their_input(tmp_path):
    """`bake --recast-frame` reads the OBJ mirrored (x, z, y), as RecastDemo does. Its .bin
    was written back in the file's own frame but its .obj with the engine turn, so it came
    out mirrored (z -> -z) against its input and the .bin (a link given at z 19.9 at -19.9).
    Now the .obj is in the file's frame too, facing up; the .json says which frame it is in."""
    from core.__main__ import main
    from core.nav.binio import read_navmesh_set

    from .refdata import mesh_path

    link = "--offmesh-link=-22.9,-2.2,19.9:-1.5,-2.2,1.1"
    for suffix in ("obj", "bin", "json"):
        out = tmp_path / f"nav.{suffix}"
        assert (
            main(["bake", str(mesh_path("nav_test")), "--recast-frame", link, "--out", str(out)])
            == 0
        )
    verts, objects = read_obj_objects(tmp_path / "nav.obj")
    tile = read_navmesh_set(tmp_path / "nav.bin").tiles[0]
    # The link's ends as given (file frame), in the .obj and the .bin alike.
    np.testing.assert_allclose(verts[-2:], [[-22.9, -2.2, 19.9], [-1.5, -2.2, 1.1]], atol=1e-4)
    np.testing.assert_allclose(tile.off_mesh_pos.reshape(-1, 3), verts[-2:], atol=1e-4)
    ground = tile.nverts - 2  # Detour keeps the link ends after the polygon vertices
    np.testing.assert_allclose(verts[:ground], tile.verts[:ground], atol=1e-4)
    for face in objects["navmesh"]:  # still facing up (+Y)
        p = verts[np.array(face) - 1]
        q = np.roll(p, -1, axis=0)
        assert np.sum((p[:, 2] - q[:, 2]) * (p[:, 0] + q[:, 0])) > 0
    doc = json.loads((tmp_path / "nav.json").read_text())
    assert "--recast-frame" in doc["axes"]
    with pytest.raises(VoxNavError, match="unknown OBJ frame"):
        write_obj(tmp_path / "x.obj", SimpleNamespace(), frame="blender")


def test_obj_without_detail(navmesh, tmp_path):
    pmesh, _dmesh = navmesh
    path = tmp_path / "poly.obj"
    write_obj(path, pmesh)
    verts, objects = read_obj_objects(path)
    assert set(objects) == {"navmesh"}
    assert verts.shape[0] == pmesh.verts.shape[0]
    assert "Y-up" in path.read_text().splitlines()[1]


def test_json_round_trip(navmesh, tmp_path):
    pmesh, dmesh = navmesh
    path = tmp_path / "navmesh.json"
    write_json(path, pmesh, dmesh)
    doc = json.loads(path.read_text())
    assert doc == navmesh_to_dict(pmesh, dmesh)
    back, dback = read_navmesh_json(path)
    np.testing.assert_array_equal(back.verts, pmesh.verts)
    np.testing.assert_array_equal(back.polys, pmesh.polys)
    for name in ("regs", "flags", "areas", "bmin", "bmax"):
        got, want = getattr(back, name), getattr(pmesh, name)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.asarray(want).dtype
    assert back.nvp == pmesh.nvp and back.cs == pmesh.cs and back.ch == pmesh.ch
    np.testing.assert_array_equal(dback.meshes, dmesh.meshes)
    np.testing.assert_array_equal(dback.verts, dmesh.verts)  # bit-exact float32
    np.testing.assert_array_equal(dback.tris, dmesh.tris)
    # Writing what was read gives the same document.
    assert navmesh_to_dict(back, dback) == doc


def test_json_document_contents(navmesh):
    pmesh, dmesh = navmesh
    doc = navmesh_to_dict(pmesh, dmesh)
    assert doc["format"] == "voxnav-navmesh" and doc["version"] == 1
    assert "Z-up" in doc["axes"]
    npolys = pmesh.polys.shape[0]
    assert len(doc["polygons"]) == len(doc["neighbours"]) == len(doc["detail"]) == npolys
    for ids, nbs in zip(doc["polygons"], doc["neighbours"], strict=True):
        assert len(ids) == len(nbs) >= 3
        assert all(-1 <= n < npolys for n in nbs)
    # Neighbours are symmetric.
    for p, nbs in enumerate(doc["neighbours"]):
        for n in nbs:
            if n >= 0:
                assert p in doc["neighbours"][n]
    world = np.array(doc["vertices"])
    np.testing.assert_allclose(world[:, 2], pmesh.bmin[2] + pmesh.verts[:, 1] * pmesh.ch, atol=1e-4)
    # Detail sub-meshes start with the polygon's vertices (x/y).
    for ids, det in zip(doc["polygons"], doc["detail"], strict=True):
        dv = np.array(det["vertices"])
        np.testing.assert_allclose(dv[: len(ids), :2], world[ids, :2], atol=1e-4)
        assert all(0 <= i < len(dv) for t in det["triangles"] for i in t[:3])


def test_json_without_detail(navmesh, tmp_path):
    pmesh, _dmesh = navmesh
    path = tmp_path / "poly.json"
    write_json(path, pmesh)
    back, dback = read_navmesh_json(path)
    assert dback is None
    np.testing.assert_array_equal(back.polys, pmesh.polys)


def test_missing_folder_is_named(navmesh, tmp_path):
    pmesh, dmesh = navmesh
    target = tmp_path / "no" / "such" / "navmesh.obj"
    with pytest.raises(VoxNavError, match="no/such"):
        write_obj(target, pmesh, dmesh)
    with pytest.raises(VoxNavError, match="no/such"):
        write_json(target.with_suffix(".json"), pmesh, dmesh)


def test_bad_input(navmesh, tmp_path):
    pmesh, dmesh = navmesh
    empty = SimpleNamespace(**{**vars(pmesh), "polys": pmesh.polys[:0], "regs": pmesh.regs[:0]})
    with pytest.raises(VoxNavError, match="empty"):
        write_obj(tmp_path / "a.obj", empty)
    with pytest.raises(VoxNavError, match="empty"):
        navmesh_to_dict(empty)
    with pytest.raises(VoxNavError, match="polys"):
        navmesh_to_dict(SimpleNamespace(**{**vars(pmesh), "polys": pmesh.polys[:, :7]}))
    with pytest.raises(VoxNavError, match="verts"):
        write_json(
            tmp_path / "b.json", SimpleNamespace(**{**vars(pmesh), "verts": pmesh.verts[:, :2]})
        )
    with pytest.raises(VoxNavError, match="detail meshes"):
        navmesh_to_dict(
            pmesh, SimpleNamespace(meshes=dmesh.meshes[:-1], verts=dmesh.verts, tris=dmesh.tris)
        )
    with pytest.raises(VoxNavError):
        navmesh_to_dict(None)
    assert not (tmp_path / "a.obj").exists()


def test_exporters_name_arguments_of_the_wrong_kind(navmesh, tmp_path):
    # A NaN in the paths was written as the token NaN (no JSON parser reads it); a wrong
    # offmesh or a non-detail mesh for .bin raised AttributeError; a bytes path TypeError.
    from core.export import write_detour_bin, write_navmesh

    pmesh, dmesh = navmesh
    target = tmp_path / "n.json"
    target.write_text("OLD")
    with pytest.raises(VoxNavError, match="NaN or infinite"):
        write_json(target, pmesh, dmesh, paths=[{"points": [[0.0, 0.0, float("nan")]]}])
    assert target.read_text() == "OLD"
    for name in ("a.obj", "a.json", "a.bin"):
        with pytest.raises(VoxNavError, match="offmesh must be core.offmesh.OffMeshLinks"):
            write_navmesh(tmp_path / name, pmesh, dmesh, offmesh="links")
    with pytest.raises(VoxNavError, match="not a detail mesh"):
        write_detour_bin(
            tmp_path / "a.bin", pmesh, pmesh, agent_height=2, agent_radius=0.6,
            agent_max_climb=0.9,
        )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.json"]
    write_navmesh(str(tmp_path / "b.obj").encode(), pmesh, dmesh)
    assert (tmp_path / "b.obj").stat().st_size > 0


def test_read_names_json_it_cannot_parse(tmp_path):
    """Arrays nested thousands deep (RecursionError) and an integer of more than 4300 digits
    (ValueError) escaped the reader."""
    bad = tmp_path / "bad.json"
    for text, needle in (("[" * 100000 + "]" * 100000, "nests too deep"), ("9" * 5000, "digits")):
        bad.write_text(text)
        with pytest.raises(VoxNavError, match=f"cannot read navmesh JSON .*{needle}"):
            read_navmesh_json(bad)


def test_read_rejects_other_files(tmp_path):
    with pytest.raises(VoxNavError, match="does not exist"):
        read_navmesh_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(VoxNavError, match="cannot read"):
        read_navmesh_json(bad)
    bad.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(VoxNavError, match="not a VoxNav navmesh"):
        read_navmesh_json(bad)
    bad.write_text(json.dumps({"format": "voxnav-navmesh", "version": 1}))
    with pytest.raises(VoxNavError, match="malformed"):
        read_navmesh_json(bad)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(max_verts_per_poly=9), "max_verts_per_poly must be 3..6"),
        (lambda d: d.update(cell_size=-0.3), "cell_size must be > 0"),
        (lambda d: d.update(cell_height=float("nan")), "cell_height must be > 0"),
        (lambda d: d.update(bmin=[0.0, 0.0]), "bmin must be 3 numbers"),
        (lambda d: d["vertices_cells"][0].__setitem__(0, -1), "a vertex cell is not 0..65534"),
        (lambda d: d["polygons"][0].__setitem__(0, 10**6), "refers to a vertex outside"),
        (lambda d: d["neighbours"][0].__setitem__(0, 99999), "has a neighbour outside -1.."),
        (lambda d: d.update(areas=[300] * len(d["areas"])), "areas must be 0..255"),
        (
            lambda d: d["detail"][0]["triangles"][0].__setitem__(0, 250),
            "a detail triangle refers to a vertex its polygon's detail does not have",
        ),
        # Read as float64, kept as float32: 1e300 became infinite, 1e-300 zero.
        (lambda d: d.update(cell_size=1e300), "cell_size must be > 0"),
        (lambda d: d.update(cell_height=1e-300), "cell_height must be > 0"),
        (lambda d: d.update(bmin=[1e300, 0.0, 0.0]), "bmin must be within"),
        (lambda d: d["detail"][0]["vertices"][0].__setitem__(0, 1e300), "a detail vertex must"),
        (lambda d: d.update(bmin=d["bmax"], bmax=d["bmin"]), "bmin must not lie above bmax"),
        # Coerced before: 1.5 -> 1, "2" -> 2, true -> 1 (another mesh).
        (lambda d: d["polygons"][0].__setitem__(0, 1.5), "polygon 0's vertices must be whole"),
        (lambda d: d["polygons"][0].__setitem__(0, "2"), "polygon 0's vertices must be whole"),
        (lambda d: d["vertices_cells"][0].__setitem__(0, True), "vertices_cells must be whole"),
        (lambda d: d["detail"][0]["triangles"][0].__setitem__(0, 0.5), "detail triangles must"),
        (lambda d: d.update(flags=d["flags"][:-1]), "flags must hold one value per polygon"),
    ],
    ids=["nvp", "cell size", "cell height", "bmin", "cell", "vertex", "neighbour", "area",
         "detail triangle", "huge cell size", "tiny cell height", "huge bmin", "huge detail",
         "inverted bounds", "fractional index", "text index", "boolean cell",
         "fractional detail index", "short flags"],
)  # fmt: skip
def test_read_refuses_values_out_of_range(navmesh, tmp_path, change, message):
    # Each would have been cast to a wrong unsigned value or failed later, far from the file.
    pmesh, dmesh = navmesh
    doc = navmesh_to_dict(pmesh, dmesh)
    change(doc)
    path = tmp_path / "navmesh.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(
        VoxNavError, match=f"malformed navmesh JSON: (polygon 0 )?{re.escape(message)}"
    ):
        read_navmesh_json(path)


def test_json_with_a_neighbour_that_shares_no_edge_is_refused(navmesh, tmp_path):
    """A neighbour index that is in range but not across the edge was read as a link between
    polygons that do not touch (paths walked through walls)."""
    pmesh, dmesh = navmesh
    path = tmp_path / "navmesh.json"
    write_json(path, pmesh, dmesh)
    doc = json.loads(path.read_text())
    read_navmesh_json(path)  # every shared mesh's own links pass
    poly = next(i for i, row in enumerate(doc["neighbours"]) if any(n >= 0 for n in row))
    k = next(k for k, n in enumerate(doc["neighbours"][poly]) if n >= 0)
    far = max(
        (j for j in range(len(doc["polygons"])) if j != poly and j not in doc["neighbours"][poly]),
        key=lambda j: len(set(doc["polygons"][j]) ^ set(doc["polygons"][poly])),
    )
    doc["neighbours"][poly][k] = far
    path.write_text(json.dumps(doc))
    with pytest.raises(VoxNavError, match=f"polygon {poly}'s neighbour {far} shares no edge"):
        read_navmesh_json(path)
