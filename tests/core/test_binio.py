"""Detour's navmesh-set file (core.nav.binio): layout, round trip, bad files, atomic writes,
and the .bin export entry points (core.export, python -m core bake)."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from core.__main__ import main
from core.errors import VoxNavError
from core.export import write_detour_bin, write_navmesh
from core.nav import binio
from core.nav.navdata import NavMeshData, create_nav_mesh_data, mirror_z

from .refdata import MESHES, load_reference, mesh_path, ref_navmesh_inputs, ref_tiled_tiles

AGENT = dict(walkable_height=2.0, walkable_radius=0.6, walkable_climb=0.9)


@pytest.fixture(scope="module", params=MESHES)
def ref_tile(request):
    pmesh, dmesh = ref_navmesh_inputs(load_reference(request.param))
    return create_nav_mesh_data(pmesh, dmesh, **AGENT)


def assert_tiles_equal(a: NavMeshData, b: NavMeshData):
    for f in dataclasses.fields(NavMeshData):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        if isinstance(va, np.ndarray):
            assert va.dtype == vb.dtype, f.name
            np.testing.assert_array_equal(va, vb, err_msg=f.name)
        else:
            assert va == vb, f.name


def test_layout(ref_tile, tmp_path):
    path = tmp_path / "navmesh.bin"
    binio.write_navmesh_set(path, [ref_tile])
    data = path.read_bytes()
    assert data[:4] == b"TESM" and int.from_bytes(data[4:8], "little") == 1
    assert int.from_bytes(data[8:12], "little") == 1  # one tile
    ref, size = np.frombuffer(data, dtype=binio.TILE_HEADER, count=1, offset=40)[0]
    # Solo navmesh: maxTiles 1, maxPolys = npolys -> salt 1 above the polygon bits.
    assert ref == 1 << (ref_tile.npolys - 1).bit_length()
    tile = data[48:]
    assert len(tile) == size and size % 4 == 0
    assert tile[:4] == b"VAND" and int.from_bytes(tile[4:8], "little") == 7
    header = np.frombuffer(tile, dtype=binio.MESH_HEADER, count=1)[0]
    assert (
        header["poly_count"] == ref_tile.npolys and header["bv_node_count"] == 2 * ref_tile.npolys
    )
    # Sections: header, verts, polys, zeroed links, details, detail verts, tris, BV nodes.
    expect = 100 + 12 * ref_tile.nverts + 32 * ref_tile.npolys + 12 * ref_tile.max_link_count
    expect += 12 * ref_tile.npolys + 12 * len(ref_tile.detail_verts) + 4 * len(ref_tile.detail_tris)
    expect += 16 * 2 * ref_tile.npolys
    assert size == expect
    links = 100 + 12 * ref_tile.nverts + 32 * ref_tile.npolys
    assert not any(tile[links : links + 12 * ref_tile.max_link_count])
    params = np.frombuffer(data, dtype=binio.SET_HEADER, count=1)[0]
    np.testing.assert_array_equal(params["orig"], ref_tile.bmin)
    assert params["max_tiles"] == 1 and params["max_polys"] == ref_tile.npolys


def test_round_trip(ref_tile, tmp_path):
    path = tmp_path / "navmesh.bin"
    for tile in (ref_tile, mirror_z(ref_tile)):
        binio.write_navmesh_set(path, [tile])
        back = binio.read_navmesh_set(path)
        assert len(back.tiles) == 1 and back.params.max_polys == tile.npolys
        assert_tiles_equal(back.tiles[0], tile)
        assert binio.tile_bytes(back.tiles[0]) == binio.tile_bytes(tile)


def test_round_trip_without_bv_tree(tmp_path):
    pmesh, dmesh = ref_navmesh_inputs(load_reference("nav_test"))
    for detail in (dmesh, None):
        tile = create_nav_mesh_data(pmesh, detail, **AGENT, build_bv_tree=False)
        assert tile.bv_i.size == 0
        binio.write_navmesh_set(tmp_path / "a.bin", [tile])
        assert_tiles_equal(binio.read_navmesh_set(tmp_path / "a.bin").tiles[0], tile)


def test_many_tiles_round_trip(tmp_path):
    tiles, params = ref_tiled_tiles()
    assert sum(int(((t.poly_neis & 0x8000) != 0).sum()) for t in tiles) > 0
    path = tmp_path / "tiled.bin"
    binio.write_navmesh_set(path, tiles, params)
    back = binio.read_navmesh_set(path)
    assert len(back.tiles) == len(tiles)
    # 128 tiles x 32768 polygons: 7 tile bits, 15 polygon bits, salt 1 above them.
    assert back.tile_refs == [(1 << 22) | (i << 15) for i in range(len(tiles))]
    for a, b in zip(back.tiles, tiles, strict=True):
        assert_tiles_equal(a, b)
    with pytest.raises(VoxNavError, match="NavMeshParams"):
        binio.navmesh_set_bytes(tiles)
    small = dataclasses.replace(params, max_tiles=4)
    with pytest.raises(VoxNavError, match="max_tiles"):
        binio.navmesh_set_bytes(tiles, small)


@pytest.fixture
def good_file(tmp_path):
    pmesh, dmesh = ref_navmesh_inputs(load_reference("dungeon"))
    path = tmp_path / "good.bin"
    binio.write_navmesh_set(path, [create_nav_mesh_data(pmesh, dmesh, **AGENT)])
    return path.read_bytes()


def patched(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + int(value).to_bytes(4, "little", signed=True) + data[offset + 4 :]


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(64)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda d: b"", ["not a Detour navmesh set", "empty"]),
        (lambda d: PNG, ["not a Detour navmesh set", "PNG"]),
        (lambda d: b"TSET" + d[4:], ["not a Detour navmesh set"]),
        (lambda d: patched(d, 4, 2), ["version 2, expected 1"]),
        (lambda d: d[:20], ["truncated"]),
        (lambda d: d[:44], ["truncated", "tile 0"]),
        (lambda d: d[: len(d) - 100], ["truncated", "tile 0"]),
        (lambda d: patched(d, 48, 0x12345678), ["not Detour tile data"]),
        (lambda d: patched(d, 52, 6), ["tile data version 6, expected 7"]),
        (lambda d: patched(d, 48 + 8 * 4, 9999), ["truncated", "needs"]),  # link count
        (lambda d: patched(d, 40, 0), ["no ref"]),
    ],
)
def test_bad_files(good_file, tmp_path, make, words):
    path = tmp_path / "bad.bin"
    path.write_bytes(make(good_file))
    with pytest.raises(VoxNavError) as info:
        binio.read_navmesh_set(path)
    for word in words:
        assert word in str(info.value)
    assert str(path) in str(info.value)


def _corrupted(tile, field_name: str, change):
    """``tile`` with one array changed in a copy (as a flipped bit on disk would)."""
    values = getattr(tile, field_name).copy()
    change(values)
    return dataclasses.replace(tile, **{field_name: values})


@pytest.mark.parametrize(
    ("field_name", "change", "words"),
    [
        ("poly_verts", lambda a: a.__setitem__((0, 0), 9999), "a polygon vertex outside"),
        ("poly_neis", lambda a: a.__setitem__((0, 0), 5000), "a polygon neighbour outside"),
        (
            "poly_vert_count",
            lambda a: a.__setitem__(0, 9),
            "a polygon with a vertex count outside 3..6",
        ),
        ("bv_i", lambda a: a.__setitem__(0, 10**6), "a BV-tree node outside"),
        ("bv_bmin", lambda a: a.__setitem__((1, 0), 0xFFFF), "a BV-tree node with an inverted"),
        ("detail_meshes", lambda a: a.__setitem__((0, 2), 10**6), "a detail sub-mesh past"),
        ("detail_tris", lambda a: a.__setitem__((0, 0), 200), "a detail triangle corner"),
        # Floats (the queries turn them into cells: int(NaN) raised ValueError there).
        ("bmin", lambda a: a.__setitem__(0, np.nan), "its bounds hold a number that is not"),
        ("verts", lambda a: a.__setitem__((0, 1), np.inf), "its vertices hold a number"),
        ("detail_verts", lambda a: a.__setitem__((0, 1), np.nan), "its detail vertices hold"),
    ],
)
def test_corrupt_indices_are_refused(good_file, tmp_path, field_name, change, words):
    # Detour trusts these; read back, they would send a query past an array's end.
    tile = binio.navmesh_set_from_bytes(good_file).tiles[0]
    path = tmp_path / "flipped.bin"
    path.write_bytes(binio.navmesh_set_bytes([_corrupted(tile, field_name, change)]))
    with pytest.raises(VoxNavError, match=f"tile 0: {words}.*: corrupt file"):
        binio.read_navmesh_set(path)


def test_a_non_finite_quantisation_factor_is_refused(good_file, tmp_path):
    tile = binio.navmesh_set_from_bytes(good_file).tiles[0]
    path = tmp_path / "flipped.bin"
    path.write_bytes(binio.navmesh_set_bytes([dataclasses.replace(tile, bv_quant_factor=np.nan)]))
    with pytest.raises(VoxNavError, match="its agent sizes or BV quantisation hold a number"):
        binio.read_navmesh_set(path)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            {"bv_quant_factor": np.float32(3.4e38)},
            "its agent sizes or BV quantisation hold a number beyond",
        ),
        ({"bmin": np.float32([0, -3.4e38, 0])}, "its bounds hold a number beyond"),
        ({"bv_quant_factor": np.float32(1e8)}, "its BV quantisation 1e\\+08 does not fit"),
        ({"bv_quant_factor": np.float32(-3.0)}, "its BV quantisation -3 does not fit"),
    ],
    ids=["huge quantisation", "huge bound", "quantisation past int32", "negative quantisation"],
)
def test_finite_but_impossible_numbers_are_refused(good_file, tmp_path, change, words):
    """Finite values far beyond any world loaded, then every nearest-polygon query raised
    OverflowError (float infinity to integer)."""
    tile = binio.navmesh_set_from_bytes(good_file).tiles[0]
    if "bmin" in change:
        change = {"bmin": np.minimum(tile.bmin, change["bmin"])}
    path = tmp_path / "bad.bin"
    path.write_bytes(binio.navmesh_set_bytes([dataclasses.replace(tile, **change)]))
    with pytest.raises(VoxNavError, match=f"tile 0: {words}"):
        binio.read_navmesh_set(path)
    inverted = dataclasses.replace(tile, bmin=tile.bmax, bmax=tile.bmin)
    path.write_bytes(binio.navmesh_set_bytes([inverted]))
    with pytest.raises(VoxNavError, match="its bounds are inverted"):
        binio.read_navmesh_set(path)


def test_missing_file(tmp_path):
    with pytest.raises(VoxNavError, match="cannot read"):
        binio.read_navmesh_set(tmp_path / "none.bin")


def test_failed_write_keeps_old_file(good_file, tmp_path, monkeypatch):
    path = tmp_path / "navmesh.bin"
    path.write_bytes(b"old content")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)  # core.atomic fsyncs before the rename
    tile = binio.navmesh_set_from_bytes(good_file).tiles[0]
    with pytest.raises(VoxNavError, match="No space left"):
        binio.write_navmesh_set(path, [tile])
    assert path.read_bytes() == b"old content"
    assert sorted(os.listdir(tmp_path)) == ["good.bin", "navmesh.bin"]  # no temp file left


def test_write_errors_and_file_mode(good_file, tmp_path):
    tile = binio.navmesh_set_from_bytes(good_file).tiles[0]
    with pytest.raises(VoxNavError, match="cannot write"):
        binio.write_navmesh_set(tmp_path / "missing" / "a.bin", [tile])
    with pytest.raises(VoxNavError, match="no navmesh tiles"):
        binio.write_navmesh_set(tmp_path / "a.bin", [])
    binio.write_navmesh_set(tmp_path / "a.bin", [tile])
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.bin").stat().st_mode & 0o777 == 0o666 & ~umask


def test_export_by_extension(tmp_path):
    pmesh, dmesh = ref_navmesh_inputs(load_reference("dungeon"))
    write_navmesh(tmp_path / "n.bin", pmesh, dmesh, recast_frame=True)
    tile = binio.read_navmesh_set(tmp_path / "n.bin").tiles[0]
    assert_tiles_equal(tile, create_nav_mesh_data(pmesh, dmesh, **AGENT))
    write_navmesh(tmp_path / "e.bin", pmesh, dmesh)
    engine = binio.read_navmesh_set(tmp_path / "e.bin").tiles[0]
    np.testing.assert_array_equal(engine.verts[:, 2], -tile.verts[:, 2])  # (x, z, -y)
    write_navmesh(tmp_path / "n.obj", pmesh, dmesh)
    write_navmesh(tmp_path / "n.json", pmesh, dmesh)
    assert (tmp_path / "n.obj").stat().st_size and (tmp_path / "n.json").stat().st_size
    with pytest.raises(VoxNavError, match=r"\.bin"):
        write_navmesh(tmp_path / "n.txt", pmesh, dmesh)
    with pytest.raises(VoxNavError, match="frame"):
        write_detour_bin(
            tmp_path / "x.bin", pmesh, dmesh, agent_height=2, agent_radius=0.6,
            agent_max_climb=0.9, frame="sideways",
        )  # fmt: skip
    with pytest.raises(VoxNavError, match="bake"):
        write_navmesh(tmp_path / "x.bin", None)


@pytest.mark.parametrize("height", [float("nan"), 1e39, -1.0, "tall"])
def test_agent_sizes_the_tile_header_cannot_hold_are_refused_and_the_old_file_kept(
    tmp_path, height
):
    # Written as float32: NaN or 1e39 replaced the old file by one our own reader (and
    # Detour) refuse as corrupt.
    from core.config import NavConfig

    pmesh, dmesh = ref_navmesh_inputs(load_reference("dungeon"))
    target = tmp_path / "n.bin"
    target.write_bytes(b"OLD")
    with pytest.raises(VoxNavError, match="agent_height must be a number"):
        write_detour_bin(
            target, pmesh, dmesh, agent_height=height, agent_radius=0.6, agent_max_climb=0.9
        )
    if isinstance(height, float):
        with pytest.raises(VoxNavError, match="agent_height"):
            write_navmesh(target, pmesh, dmesh, config=NavConfig(agent_height=height))
    assert target.read_bytes() == b"OLD" and sorted(tmp_path.iterdir()) == [target]


def test_cli_bake_writes_bin(tmp_path, capsys):
    out = tmp_path / "navmesh.bin"
    assert main(["bake", str(mesh_path("nav_test")), "--recast-frame", "--out", str(out)]) == 0
    navmesh = binio.read_navmesh_set(out)
    ref = load_reference("nav_test")
    assert navmesh.tiles[0].npolys == int(ref["pmesh_npolys"])
    assert main(["bake", str(mesh_path("nav_test")), "--out", str(tmp_path / "n.png")]) == 2
    assert "cannot tell the navmesh format" in capsys.readouterr().err
