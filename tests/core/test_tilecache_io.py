"""A TileCache saved to one .npz and loaded back (core/tilecache_io.py): the same tiles, navmesh
and obstacles; stale, damaged or missing files are one clear message, never a traceback."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import struct
import zipfile

import numpy as np
import pytest

from core import obstacles as ob
from core import tilecache_io
from core.errors import VoxNavError
from core.tilecache import TileCache

from .test_tilecache import (
    TILE,
    _assert_equals_full_bake,
    _floor_point,
    _links,
    _same,
    built,
    scene,
)

__all__ = ["built", "scene"]  # the module fixtures, shared with test_tilecache


@pytest.fixture()
def cache(built):
    return copy.deepcopy(built)


def _assert_same_cache(a: TileCache, b: TileCache) -> None:
    assert a.config == b.config
    for f in dataclasses.fields(a.grid):
        x, y = getattr(a.grid, f.name), getattr(b.grid, f.name)
        assert type(x) is type(y) and np.array_equal(x, y), f.name
    assert list(a.compact) == list(b.compact)
    for k, chf in a.compact.items():
        assert _same(chf, b.compact[k]), k
    assert set(a.tiles) == set(b.tiles)
    for k, tile in a.tiles.items():
        other = b.tiles[k]
        for part in ("polymesh", "detail", "navdata"):
            assert _same(getattr(tile, part), getattr(other, part)), (k, part)
    assert a.obstacles.ids() == b.obstacles.ids()
    assert all(a.obstacles.get(i) == b.obstacles.get(i) for i in a.obstacles.ids())
    la, lb = _links(a.navmesh), _links(b.navmesh)
    assert la.keys() == lb.keys()
    assert all(sorted(la[p]) == sorted(lb[p]) for p in la)


def test_round_trip_with_obstacles_equals_the_saved_cache(scene, cache, tmp_path):
    spot = _floor_point(cache, (1, 1)) - [0, 0, 0.5]
    a = cache.add(ob.cylinder(spot, 1.2, 2.5))
    b = cache.add(ob.box(spot + [2, 2, 0], spot + [3, 3, 2]))
    cache.add(ob.oriented_box(_floor_point(cache, (0, 2)) + [0, 0, 0.5], (2, 0.5, 1.5), 0.6))
    cache.remove(b)  # an id gap: the loaded cache keeps ids 0 and 2
    cache.update()
    path = cache.save(tmp_path / "tiles", key="bake-1")
    assert path.name == "tiles.npz" and tilecache_io.read_key(path) == "bake-1"
    loaded = TileCache.load(path, key="bake-1")
    _assert_same_cache(cache, loaded)
    assert loaded.obstacles.ids() == [0, 2] and not loaded.dirty
    # The loaded cache goes on like the saved one: move an obstacle in both.
    for c in (cache, loaded):
        c.move(a, spot + [1.5, 0, 0])
        c.update()
    _assert_same_cache(cache, loaded)
    _assert_equals_full_bake(scene, loaded)
    # Without obstacles: the obstacle-free cache, tile for tile the first build.
    clean = TileCache.load(path, obstacles=False)
    assert len(clean.obstacles) == 0
    _assert_equals_full_bake(scene, clean)


def test_stale_missing_and_damaged_files_are_clear_messages(cache, tmp_path):
    path = cache.save(tmp_path / "c.npz", key="bake-1")
    with pytest.raises(
        VoxNavError, match=r"c\.npz is stale: it was saved for another bake.*rebake"
    ):
        TileCache.load(path, key="bake-2")
    with pytest.raises(VoxNavError, match=r"no tile cache at .*gone\.npz: the file is missing"):
        TileCache.load(tmp_path / "gone.npz")
    data = path.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(VoxNavError, match=r"cut\.npz is unreadable .*delete it and rebake"):
        TileCache.load(cut)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip at all" * 10)
    with pytest.raises(VoxNavError, match=r"junk\.npz is unreadable"):
        TileCache.load(junk)
    other = tmp_path / "other.npz"
    np.savez(other, meta=np.array(json.dumps({"format": "something else"})))
    with pytest.raises(VoxNavError, match=r"other\.npz is not a VoxNav tile cache"):
        TileCache.load(other)
    # A newer format version, and a file with an array missing.
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"][()]))
    newer = tmp_path / "newer.npz"
    np.savez(newer, **{**arrays, "meta": np.array(json.dumps({**meta, "version": 99}))})
    with pytest.raises(VoxNavError, match=r"format version 99, this VoxNav reads version 1"):
        TileCache.load(newer)
    holed = tmp_path / "holed.npz"
    np.savez(holed, **{k: v for k, v in arrays.items() if k != "compact.neighbor"})
    with pytest.raises(VoxNavError, match=r"holed\.npz is unreadable"):
        TileCache.load(holed)
    # Edited metadata: a config of the wrong JSON type (an AttributeError before), a setting
    # out of range (refused without naming the file before).
    listed = tmp_path / "listed.npz"
    np.savez(listed, **{**arrays, "meta": np.array(json.dumps({**meta, "config": [1, 2]}))})
    with pytest.raises(VoxNavError, match=r"listed\.npz is unreadable .*delete it and rebake"):
        TileCache.load(listed)
    bad = tmp_path / "bad.npz"
    config = {**meta["config"], "cell_size": -1.0}
    np.savez(bad, **{**arrays, "meta": np.array(json.dumps({**meta, "config": config}))})
    with pytest.raises(VoxNavError, match=r"bad\.npz cannot be used: .*cell_size.*rebake"):
        TileCache.load(bad)
    # A flipped byte early in a compressed member's stream: zlib's own error (not a
    # BadZipFile), named as damage too. The stream starts after the local header's name and
    # extra field (their lengths at bytes 26 and 28 of the header).
    with zipfile.ZipFile(path) as archive:
        member = max(archive.infolist(), key=lambda info: info.compress_size)
    name_len, extra_len = struct.unpack_from("<HH", data, member.header_offset + 26)
    flipped = bytearray(data)
    flipped[member.header_offset + 30 + name_len + extra_len + 3] ^= 0xFF
    (tmp_path / "flipped.npz").write_bytes(bytes(flipped))
    with pytest.raises(VoxNavError, match=r"flipped\.npz is unreadable .*delete it and rebake"):
        TileCache.load(tmp_path / "flipped.npz")
    # A member's compression method changed (a copy or disk error): zipfile's own
    # NotImplementedError, named as damage too.
    unknown = bytearray(data)
    at = unknown.find(b"PK\x01\x02")
    while at != -1:
        struct.pack_into("<H", unknown, at + 10, 10)  # the central header's method field
        at = unknown.find(b"PK\x01\x02", at + 4)
    (tmp_path / "method.npz").write_bytes(bytes(unknown))
    with pytest.raises(VoxNavError, match=r"method\.npz is unreadable .*delete it and rebake"):
        TileCache.load(tmp_path / "method.npz")
    # A failed save leaves the old file whole.
    before = path.read_bytes()
    with pytest.raises(VoxNavError):
        cache.save(tmp_path / "no_such_folder" / "c.npz")
    assert path.read_bytes() == before
    assert zipfile.is_zipfile(path)


def test_paths_and_keys_of_the_wrong_kind_are_named(scene, tmp_path):
    verts, tris, config = scene
    cache = TileCache.build(verts, tris, config, 32, workers=1)
    for path in (None, 3):
        with pytest.raises(VoxNavError, match="a tile cache path must be a file path"):
            TileCache.load(path)
        with pytest.raises(VoxNavError, match="a tile cache path must be a file path"):
            cache.save(path)
    with pytest.raises(VoxNavError, match="key is text"):
        cache.save(tmp_path / "c.npz", key=b"abc")
    assert not list(tmp_path.iterdir())


def test_bake_key_changes_with_every_input(scene):
    verts, tris, config = scene
    key = tilecache_io.bake_key(verts, tris, config, 32)
    assert key == tilecache_io.bake_key(verts.copy(), tris.copy(), config, 32)
    moved = verts.copy()
    moved[0, 0] += 0.01
    others = {
        tilecache_io.bake_key(moved, tris, config, 32),
        tilecache_io.bake_key(verts, tris[::-1], config, 32),
        tilecache_io.bake_key(verts, tris, dataclasses.replace(config, agent_radius=0.5), 32),
        tilecache_io.bake_key(verts, tris, config, 64),
        tilecache_io.bake_key(verts, tris, config, 32, (ob.box((0, 0, 0), (1, 1, 1)).volume(),)),
    }
    assert key not in others and len(others) == 5


def test_bake_key_changes_with_the_hand_made_links(scene):
    """The hand-made links are in the tiles' Detour data: two bakes differing only in a
    link's end had one key, so Blender kept the old sidecar (same key: not written again) and
    a reopened file brought the old link back. No links: the key is what it was."""
    from core.offmesh import OffMeshLinks

    verts, tris, config = scene
    key = tilecache_io.bake_key(verts, tris, config, 32)
    one = OffMeshLinks.create([(1.0, 1.0, 0.0)], [(4.0, 1.0, 0.0)], 0.5)
    moved = OffMeshLinks.create([(1.0, 1.0, 0.0)], [(4.0, 2.0, 0.0)], 0.5)
    one_way = OffMeshLinks.create([(1.0, 1.0, 0.0)], [(4.0, 1.0, 0.0)], 0.5, False)
    keys = {
        tilecache_io.bake_key(verts, tris, config, 32, offmesh_links=links)
        for links in (one, moved, one_way)
    }
    assert len(keys) == 3 and key not in keys
    assert tilecache_io.bake_key(verts, tris, config, 32, offmesh_links=OffMeshLinks.empty()) == key
    assert tilecache_io.bake_key(verts, tris, config, 32, offmesh_links=None) == key


def test_bake_key_tells_long_volume_outlines_apart(scene):
    # repr() shortens arrays of more than 1000 numbers to "...": two 400-point outlines
    # differing inside had one key, and a cache baked with one loaded for the other.
    from core.pipeline import AreaVolume

    verts, tris, config = scene
    angle = np.linspace(0.0, 2.0 * np.pi, 400, endpoint=False)
    circle = np.c_[12 * np.cos(angle), 12 * np.sin(angle), np.zeros(400)]
    smaller = circle.copy()
    smaller[3:-3, :2] *= 0.2
    keys = {
        tilecache_io.bake_key(verts, tris, config, 32, (AreaVolume("convex", pts, 0, -9, 9),))
        for pts in (circle, smaller, circle + np.array([0.0, 0.0, 1e-9]))
    }
    assert len(keys) == 3
    # Without volumes the key is what it was (saved caches still load).
    plain = hashlib.sha256()
    plain.update(np.ascontiguousarray(verts, dtype=np.float32).tobytes())
    plain.update(np.ascontiguousarray(tris, dtype=np.int32).tobytes())
    config_json = json.dumps(tilecache_io._jsonable(dataclasses.asdict(config)), sort_keys=True)
    plain.update(config_json.encode())
    plain.update(b"32")
    plain.update(b"()")
    assert tilecache_io.bake_key(verts, tris, config, 32) == plain.hexdigest()[:32]


def _rewritten(path, tmp_path, name: str, arrays=None, meta=None):
    """A copy of the cache file ``path`` with some arrays and its metadata replaced."""
    with np.load(path) as z:
        members = {k: z[k] for k in z.files}
    saved = json.loads(str(members["meta"][()]))
    members.update(arrays or {})
    members["meta"] = np.array(json.dumps(meta(saved) if meta else saved))
    out = tmp_path / name
    np.savez(out, **members)
    return out


def test_damaged_or_edited_cache_parts_are_refused(cache, tmp_path):
    """The saved Detour tile data was trusted (a polygon vertex of -1 loaded and took another
    tile's vertex; a detail triangle count of 2**32-1 allocated 32 GiB), an edited tile count
    of 2**31 allocated gigabytes, a meta without a key raised KeyError in read_key, and a
    member declaring a shape of terabytes raised MemoryError."""
    path = cache.save(tmp_path / "c.npz", key="k")
    with np.load(path) as z:
        verts = z["navdata.poly_verts"].astype(np.int64)
        meshes = z["navdata.detail_meshes"].copy()
    verts[0, 0] = -1
    meshes[0, 3] = 0xFFFFFFFF
    bad = {
        "vertex": _rewritten(path, tmp_path, "v.npz", {"navdata.poly_verts": verts}),
        "detail": _rewritten(path, tmp_path, "d.npz", {"navdata.detail_meshes": meshes}),
        "grid": _rewritten(
            path, tmp_path, "g.npz", meta=lambda m: {**m, "grid": {**m["grid"], "tiles_w": 2**31}}
        ),
    }
    for file in bad.values():
        with pytest.raises(VoxNavError, match=rf"{file.name} cannot be used: .*rebake"):
            TileCache.load(file)

    keyless = _rewritten(
        path, tmp_path, "nokey.npz", meta=lambda m: {k: v for k, v in m.items() if k != "key"}
    )
    with pytest.raises(VoxNavError, match="holds no bake key"):
        tilecache_io.read_key(keyless)
    huge = tmp_path / "huge.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(huge, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "compact.y.npy":  # declare 10**11 rows of the same dtype
                head = data[: data.index(b"\n") + 1].decode("latin1")
                shape = head[head.index("'shape': (") + 10 : head.index(")", head.index("'shape'"))]
                data = data.replace(f"'shape': ({shape})".encode(), b"'shape': (100000000000,)", 1)
            dst.writestr(info, data)
    with pytest.raises(VoxNavError, match=r"huge\.npz is unreadable \(MemoryError"):
        TileCache.load(huge)


def _resaved(path, out, change) -> None:
    """``path``'s members, ``change(members)`` applied, saved again as a valid .npz."""
    with np.load(path) as z:
        members = {name: z[name] for name in z.files}
    change(members)
    np.savez(out, **members)


def test_an_edited_compact_heightfield_is_refused_and_an_older_cache_still_loads(cache, tmp_path):
    """Edited compact spans (a valid zip and CRC) loaded: an obstacle's rebuild then read a
    span out of range (a raw IndexError) or rebuilt other tiles than the bake's."""
    path = cache.save(tmp_path / "good.npz", key="k")

    def heights(members):
        members["compact.y"] = members["compact.y"] + 1

    def links(members):
        members["compact.neighbor"] = members["compact.neighbor"] * 0 + 2**30

    def older(members):  # a cache saved before the digest
        meta = json.loads(str(members["meta"]))
        del meta["digest"]
        members["meta"] = np.array(json.dumps(meta))

    for change, needle in ((heights, "damaged or edited"), (links, "a link to a span")):
        _resaved(path, tmp_path / "bad.npz", change)
        with pytest.raises(VoxNavError, match=needle):
            tilecache_io.load(tmp_path / "bad.npz")
    _resaved(path, tmp_path / "old.npz", older)
    _assert_same_cache(tilecache_io.load(tmp_path / "old.npz"), tilecache_io.load(path))


def test_each_member_is_read_once(cache, tmp_path, monkeypatch):
    """The digest check read every array of the file, then the cache was built from a second
    read: a large cache was decompressed twice."""
    path = tilecache_io.save(cache, tmp_path / "c.npz", key="k")
    reads: dict[str, int] = {}
    original = np.lib.npyio.NpzFile.__getitem__

    def counting(self, name):
        reads[name] = reads.get(name, 0) + 1
        return original(self, name)

    monkeypatch.setattr(np.lib.npyio.NpzFile, "__getitem__", counting)
    loaded = tilecache_io.load(path, key="k")
    _assert_same_cache(loaded, cache)
    assert reads and max(reads.values()) == 1, {k: v for k, v in reads.items() if v > 1}


def test_a_cache_of_uncropped_tiles_is_refused(scene, tmp_path, monkeypatch):
    """Caches saved before bounded tiled bakes were cropped to the bounds held the last tile
    column and row at full width, and loaded as if they were the bake's."""
    from core import tiles

    verts, tris, config = scene
    monkeypatch.setattr(tiles, "_cropped", lambda hf, *columns: hf)  # as before the fix
    old = TileCache.build(verts, tris, config, TILE, workers=1)
    monkeypatch.undo()
    path = tilecache_io.save(old, tmp_path / "old.npz", key="k")
    with pytest.raises(VoxNavError, match=r"reaches past the build volume's bounds.*older"):
        tilecache_io.load(path, key="k")
