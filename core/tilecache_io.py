"""A `TileCache` saved to one ``.npz`` and loaded back: obstacles rebuild without a rebake.

What is saved is the cache's obstacle-free state, the data a rebuild starts from: the config,
the tile grid, every tile's cached compact heightfield (`TileCache.compact`), every tile's
obstacle-free result (polygon mesh, detail mesh, Detour tile data), the obstacles (shape and
id) and the hand-made off-mesh links. Loading rebuilds the navmesh from those tiles (linked as
the first build linked them), adds the obstacles again under their ids and runs
`TileCache.update`, so the loaded cache equals the saved one tile for tile (the stages are
deterministic). Loading without obstacles (``obstacles=False``) gives the obstacle-free cache,
for callers that add their own (the Blender add-on re-reads them from the scene's objects).

A ``key`` string names the bake the cache belongs to (e.g. `bake_key` of the bake's input:
triangles, settings, tile size, area volumes); `load` with an expected key refuses a file made
for another bake. Every problem (missing, unreadable, truncated, another format or version,
another bake) is a `VoxNavError` whose message names the file and says to rebake; the file is
written through `core.atomic` (the old file stays whole until the new one is complete).

File layout (NumPy ``.npz``, no pickles): ``meta`` a JSON string (format, version, key, config,
grid scalars, tile keys, per-tile scalar fields, obstacles, link scalars); ``grid.{field}``
and ``offmesh_links.{field}`` the grid's and the links' arrays; ``{part}.{field}`` one array
field of every tile's ``compact`` / ``polymesh`` / ``detail`` / ``navdata`` concatenated in
tile order, ``{part}.{field}.rows`` each tile's row
count (NumPy scalars such as the float32 cell size are one element each, so dtypes survive).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zipfile
from typing import Any

import numpy as np

from . import atomic
from .compact import CompactHeightfield
from .config import NavConfig
from .detail import PolyMeshDetail
from .errors import ARCHIVE_READ_ERRORS, VoxNavError
from .nav import binio
from .nav.navdata import NavMeshData
from .obstacles import Obstacle
from .offmesh import OffMeshLinks
from .polymesh import PolyMesh
from .tilecache import TileCache
from .tiles import TiledBake, TileGrid, TileResult, grid_columns_in_tile

FORMAT = "voxnav-tilecache"
VERSION = 1
_PARTS: dict[str, type] = {
    "compact": CompactHeightfield,
    "polymesh": PolyMesh,
    "detail": PolyMeshDetail,
    "navdata": NavMeshData,
}


def bake_key(verts, tris, config: NavConfig, tile_size: int, volumes=(), offmesh_links=None) -> str:
    """A hex digest naming a tiled bake's input: the triangles (float32 vertices, int32
    indices), the config, the tile size, the area volumes and the hand-made off-mesh links
    (`core.offmesh.OffMeshLinks` or None; they are in the tiles' Detour data). Two bakes with
    the same key give the same tiles."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(verts, dtype=np.float32).tobytes())
    h.update(np.ascontiguousarray(tris, dtype=np.int32).tobytes())
    h.update(json.dumps(_jsonable(dataclasses.asdict(config)), sort_keys=True).encode())
    h.update(str(int(tile_size)).encode())
    h.update(_volumes_bytes(tuple(volumes)))
    h.update(_links_bytes(offmesh_links))
    return h.hexdigest()[:32]


def _links_bytes(links) -> bytes:
    """The hand-made links, every field exactly; none (or an empty set): nothing, so the keys
    of caches saved without links stay as they were. (Without them two bakes differing in a
    link's place had one key: a cache saved with the old link loaded for the new one.)"""
    if links is None or len(links) == 0:
        return b""
    fields = (
        (links.start, np.float32), (links.end, np.float32), (links.radius, np.float32),
        (links.bidirectional, np.bool_), (links.area, np.uint8), (links.flags, np.uint16),
        (links.user_id, np.uint32),
    )  # fmt: skip
    return b"|links:1|" + b"|".join(
        np.ascontiguousarray(values, dtype=kind).tobytes() for values, kind in fields
    )


def _volumes_bytes(volumes: tuple) -> bytes:
    """The area volumes, every number exactly: each volume's kind, area and sizes as JSON and
    its points as float64 bytes (their ``repr`` shortened an outline of more than 1000
    numbers to "...": two different volumes gave one key, and a cache baked with one loaded
    for the other). No volumes: ``b"()"``, as before, so saved caches without them still
    load."""
    if not volumes:
        return b"()"
    parts = [b"volumes:2"]
    for volume in volumes:
        points = np.ascontiguousarray(np.asarray(volume.points, dtype=np.float64))
        header = [
            str(volume.kind), int(volume.area), float(volume.zmin), float(volume.zmax),
            float(volume.radius), float(volume.height), list(points.shape),
        ]  # fmt: skip
        parts += [json.dumps(header).encode(), points.tobytes()]
    return b"|".join(parts)


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class _Packer:
    """Array fields of many dataclass values of one part, concatenated per field along axis 0
    (a NumPy scalar as one element), with each value's row count: a few arrays per file instead
    of a few per tile (an .npz reads each array separately)."""

    def __init__(self) -> None:
        self.parts: dict[str, dict[str, list[np.ndarray]]] = {}

    def add(self, part: str, obj) -> dict[str, Any]:
        """Store ``obj``'s arrays under ``part``; returns its other (JSON) fields."""
        fields = self.parts.setdefault(part, {})
        scalars: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, (np.ndarray, np.generic)):
                arr = np.asarray(value)
                if arr.ndim == 0:
                    arr = arr.reshape(1)
                    scalars.setdefault("_0d", []).append(f.name)
                fields.setdefault(f.name, []).append(arr)
            else:
                scalars[f.name] = _jsonable(value)
        return scalars

    def arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part, fields in self.parts.items():
            for name, values in fields.items():
                if len({(v.dtype, v.shape[1:]) for v in values}) != 1:
                    raise VoxNavError(f"cannot save the tile cache: {part}.{name} differs in type")
                out[f"{part}.{name}"] = np.concatenate(values)
                out[f"{part}.{name}.rows"] = np.array([v.shape[0] for v in values], np.int64)
        return out


#: Array prefixes saved whole (`_flatten`), not packed per tile.
_UNPACKED = ("grid.", "offmesh_links.", "auto_links.")


class _Unpacker:
    """`_Packer`'s arrays split back, the i-th value of a part read with `take`."""

    def __init__(self, z) -> None:
        self.split: dict[str, list[np.ndarray]] = {}
        for name in z.files:
            if name.endswith(".rows") or "." not in name or name.startswith(_UNPACKED):
                continue
            rows = z[name + ".rows"]
            self.split[name] = np.split(z[name], np.cumsum(rows)[:-1])
        self.next: dict[str, int] = {}

    def take(self, cls: type, part: str, scalars: dict[str, Any]) -> Any:
        i = self.next.get(part, 0)
        self.next[part] = i + 1
        zero_d = set(scalars.get("_0d", ()))
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            key = f"{part}.{f.name}"
            if key in self.split:
                arr = self.split[key][i]
                values[f.name] = arr.reshape(())[()] if f.name in zero_d else arr
            elif f.name in scalars:
                value = scalars[f.name]
                values[f.name] = tuple(value) if isinstance(value, list) else value
        return cls(**values)


def _flatten(obj, prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Array and NumPy-scalar fields of a dataclass into ``arrays``; the rest returned."""
    scalars: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, (np.ndarray, np.generic)):
            arrays[f"{prefix}.{f.name}"] = np.asarray(value)
        else:
            scalars[f.name] = _jsonable(value)
    return scalars


def _unflatten(cls: type, prefix: str, scalars: dict[str, Any], z) -> Any:
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        name = f"{prefix}.{f.name}"
        if name in z.files:
            arr = z[name]
            values[f.name] = arr[()] if arr.ndim == 0 else arr
        elif f.name in scalars:
            value = scalars[f.name]
            values[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)


def save(cache: TileCache, path, *, key: str = "") -> os.PathLike | str:
    """Write ``cache`` (its obstacle-free tiles and its obstacles) to ``path`` (``.npz`` added
    when missing) atomically; returns the path written. ``key``: the bake's name (`bake_key`)."""
    _file_path(path)
    if not isinstance(key, str):
        raise VoxNavError(f"a tile cache's key is text (bake_key's), got {type(key).__name__}")
    path = atomic.ensure_suffix(path, ".npz")
    arrays: dict[str, np.ndarray] = {}
    g = cache.grid
    grid = _flatten(g, "grid", arrays)
    keys = sorted(cache.compact, key=lambda k: (k[1], k[0]))
    packer = _Packer()
    tiles = []
    for k in keys:
        entry: dict[str, Any] = {"key": list(k)}
        entry["compact"] = packer.add("compact", cache.compact[k])
        clean = cache._clean.get(k)
        if clean is not None:
            entry["result"] = {
                "input_tris": clean.input_tris,
                "hf_spans": clean.hf_spans,
                "nconts": clean.nconts,
                "warnings": list(clean.warnings),
            }
            for part in ("polymesh", "detail", "navdata"):
                value = getattr(clean, part)
                if value is not None:
                    entry["result"][part] = packer.add(part, value)
        tiles.append(entry)
    arrays.update(packer.arrays())
    obstacles = [
        {"id": i, **_jsonable(dataclasses.asdict(cache.obstacles.get(i)))}
        for i in cache.obstacles.ids()
    ]
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "key": key,
        "config": _jsonable(dataclasses.asdict(cache.config)),
        "grid": grid,
        "tiles": tiles,
        "obstacles": obstacles,
    }
    if cache.offmesh_links is not None:
        meta["offmesh_links"] = _flatten(cache.offmesh_links, "offmesh_links", arrays)
    if cache.auto_links is not None:
        meta["auto_links"] = _flatten(cache.auto_links, "auto_links", arrays)
    meta["digest"] = _digest(arrays.items())
    arrays["meta"] = np.array(json.dumps(meta))
    with atomic.replacing(path) as temp:
        np.savez_compressed(temp, **arrays)  # type: ignore[arg-type]
    return path


def read_key(path) -> str:
    """The bake key stored in a saved cache (reads only its metadata); `VoxNavError` when the
    file is missing or not a VoxNav tile cache."""
    with _open(path) as z:
        key = _meta(z, path).get("key")
    if not isinstance(key, str):
        raise VoxNavError(
            f"the tile cache {os.fspath(path)} holds no bake key (damaged or edited): delete it "
            "and rebake"
        )
    return key


def _file_path(path) -> str:
    """``path`` (a str or os.PathLike) as a str; `VoxNavError` for anything else."""
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        raise VoxNavError(
            f"a tile cache path must be a file path (str or pathlib.Path), got {path!r}"
        ) from None


class _open:
    """np.load of a tile cache file with every failure as one clear `VoxNavError`."""

    def __init__(self, path):
        self.path = _file_path(path)

    def __enter__(self):
        if not os.path.isfile(self.path):
            raise VoxNavError(
                f"no tile cache at {self.path}: the file is missing; rebake (Build Navmesh with "
                "tiles) to make a new one"
            )
        if not zipfile.is_zipfile(self.path):  # NumPy would call it pickled data
            raise VoxNavError(
                f"the tile cache {self.path} is unreadable (it is not an .npz archive); it is "
                "damaged or not a VoxNav tile cache: delete it and rebake"
            )
        try:
            self.z = np.load(self.path, allow_pickle=False)
        except _UNREADABLE as exc:
            raise _corrupt(self.path, exc) from None
        return self.z

    def __exit__(self, *exc) -> None:
        self.z.close()


#: What reading a damaged cache raises.
_UNREADABLE = ARCHIVE_READ_ERRORS
#: What building a cache from a readable file's metadata raises when a field is damaged or
#: edited (a config of the wrong JSON type has no ``.items()``).
_BUILD_ERRORS: tuple[type[BaseException], ...] = (
    *ARCHIVE_READ_ERRORS, AttributeError, MemoryError,
)  # fmt: skip


def _corrupt(path, exc: BaseException) -> VoxNavError:
    return VoxNavError(
        f"the tile cache {os.fspath(path)} is unreadable ({type(exc).__name__}: {exc}); it is "
        "damaged or not a VoxNav tile cache: delete it and rebake"
    )


class _Members:
    """Every array of an open cache file but its metadata (`_meta` reads that), each
    decompressed once: the digest and `_build` read the same arrays (they read the file twice
    until 2026-11-27). ``files`` and ``[name]`` as `numpy.lib.npyio.NpzFile`'s."""

    def __init__(self, z) -> None:
        self.arrays = {name: z[name] for name in z.files if name != "meta"}
        self.files = list(self.arrays)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]


def _meta(z, path) -> dict:
    try:
        meta = json.loads(str(z["meta"][()]))
    except _UNREADABLE as exc:
        raise _corrupt(path, exc) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise VoxNavError(
            f"{os.fspath(path)} is not a VoxNav tile cache (no '{FORMAT}' header); rebake"
        )
    if meta.get("version") != VERSION:
        raise VoxNavError(
            f"the tile cache {os.fspath(path)} has format version {meta.get('version')!r}, this "
            f"VoxNav reads version {VERSION}: rebake to write a new one"
        )
    return meta


def load(path, *, key: str | None = None, obstacles: bool = True) -> TileCache:
    """The `TileCache` saved at ``path``. ``key``: the expected bake key (None: any); a
    different one means the file is stale (made for another bake). ``obstacles``: add the
    saved obstacles again (under their ids) and rebuild their tiles."""
    with _open(path) as z:
        meta = _meta(z, path)
        if key is not None and meta.get("key") != key:
            raise VoxNavError(
                f"the tile cache {os.fspath(path)} is stale: it was saved for another bake (the "
                "scene's geometry, the settings or the tile size changed since); rebake"
            )
        try:
            members = _Members(z)
        except _BUILD_ERRORS as exc:  # a member that cannot be read
            raise _corrupt(path, exc) from None
        # Its arrays against the digest it was saved with (caches of older versions have
        # none); a value `_build` refuses is named before an edit no check sees is.
        saved = meta.get("digest")
        edited = saved is not None and saved != _digest(
            (name, members[name]) for name in members.files
        )
        try:
            cache = _build(meta, members, obstacles and not edited)
        except VoxNavError as exc:  # values refused (a config or an obstacle out of range)
            raise VoxNavError(
                f"the tile cache {os.fspath(path)} cannot be used: {exc} (if the file was "
                "edited or damaged, delete it and rebake)"
            ) from None
        except _BUILD_ERRORS as exc:  # damage, or a field of the wrong JSON type
            raise _corrupt(path, exc) from None
        if edited:
            raise VoxNavError(
                f"the tile cache {os.fspath(path)} is damaged or edited (its arrays are not the "
                "ones it was saved with): delete it and rebake"
            )
        return cache


def _digest(arrays) -> str:
    """SHA-256 over (name, dtype, shape, bytes) of every array, by name: what `save` stores and
    `load` checks (an edited member, re-zipped with a valid CRC, loaded and rebuilt other
    tiles than the bake's)."""
    h = hashlib.sha256()
    for name, value in sorted(arrays, key=lambda item: item[0]):
        array = np.ascontiguousarray(value)
        h.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        h.update(array.tobytes() if array.dtype.kind != "O" else repr(array).encode())
    return h.hexdigest()


def _check_grid(grid: TileGrid, config: NavConfig) -> None:
    """The saved tile grid is the one its bounds, settings and tile size make (an edited
    tile count of 2**31 had the loader allocate gigabytes; an edited tile size loaded and
    answered differently)."""
    expected = TileGrid.create(grid.bmin, grid.bmax, config, grid.tile_size)
    for f in dataclasses.fields(TileGrid):
        if not np.array_equal(getattr(grid, f.name), getattr(expected, f.name)):
            raise VoxNavError(
                f"its tile grid's {f.name} does not follow from its bounds, settings and tile "
                "size (edited or damaged)"
            )


def _check_compact(chf: CompactHeightfield, grid: TileGrid, config: NavConfig, key) -> None:
    """Refuse (`VoxNavError`) a tile's cached compact heightfield that is not one a bake of
    this grid and config makes (an edited file: an obstacle's rebuild then read spans out of
    range, or rebuilt other tiles than the bake's)."""

    def bad(what: str) -> VoxNavError:
        return VoxNavError(f"tile {key}'s compact heightfield is damaged ({what})")

    derived = config.derived()
    side = grid.tile_size + 2 * grid.border_size
    if (chf.width, chf.height, chf.border_size) != (side, side, grid.border_size):
        raise bad(f"{chf.width} x {chf.height} cells with border {chf.border_size}")
    if (chf.walkable_height, chf.walkable_climb) != (
        derived.walkable_height,
        derived.walkable_climb,
    ) or (np.float32(chf.cs), np.float32(chf.ch)) != (derived.cs, derived.ch):
        raise bad("its agent or cell sizes are not the settings'")
    lo, _hi = grid.build_bounds(*key)
    if not np.array_equal(np.asarray(chf.bmin, np.float32)[:2], np.asarray(lo, np.float32)[:2]):
        raise bad("its corner is not its tile's")
    starts = np.asarray(chf.cell_start)
    n = int(np.asarray(chf.y).shape[0])
    if (
        starts.shape != (side * side + 1,) or int(starts[0]) != 0 or int(starts[-1]) != n
        or bool((np.diff(starts) < 0).any())
    ):  # fmt: skip
        raise bad("its column starts")
    for name, shape in (("h", (n,)), ("con", (n, 4)), ("neighbor", (n, 4)), ("area", (n,)),
                        ("span_x", (n,)), ("span_y", (n,))):  # fmt: skip
        if np.asarray(getattr(chf, name)).shape != shape:
            raise bad(f"{name} holds {np.asarray(getattr(chf, name)).shape}, not {shape}")
    column = np.repeat(np.arange(side * side, dtype=np.int64), np.diff(starts))
    if not (
        np.array_equal(np.asarray(chf.span_x, np.int64), column % side)
        and np.array_equal(np.asarray(chf.span_y, np.int64), column // side)
    ):
        raise bad("its spans' columns")
    neighbor = np.asarray(chf.neighbor, np.int64)
    if bool(((neighbor < -1) | (neighbor >= n)).any()):
        raise bad("a link to a span it does not have")
    if bool((np.asarray(chf.area) > 63).any()) or bool((np.asarray(chf.con) > 63).any()):
        raise bad("an area id or layer index above 63")


def _check_cropped(chf: CompactHeightfield, grid: TileGrid, config: NavConfig, key) -> None:
    """Refuse a tile with spans outside the build volume's explicit bounds (``bounds_max``
    set): caches saved before 2026-11-27 kept the last tile row and column at their full
    width (`core.tiles.TileJob.columns`), and an obstacle's rebuild there would differ from
    the bake."""
    if config.bounds_max is None or not np.asarray(chf.y).shape[0]:
        return
    x0, y0, x1, y1 = grid_columns_in_tile(grid, *key)
    x, y = np.asarray(chf.span_x), np.asarray(chf.span_y)
    if int(x.min()) < x0 or int(y.min()) < y0 or int(x.max()) >= x1 or int(y.max()) >= y1:
        raise VoxNavError(
            f"tile {key} reaches past the build volume's bounds: the cache was saved by an "
            "older VoxNav that did not crop tiles to bounds_min/bounds_max; rebake"
        )


def _build(meta: dict, z, with_obstacles: bool) -> TileCache:
    config_values: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in meta["config"].items()
    }
    config = NavConfig(**config_values).validate()
    grid = _unflatten(TileGrid, "grid", meta["grid"], z)
    _check_grid(grid, config)
    compact: dict[tuple[int, int], CompactHeightfield] = {}
    tiles: dict[tuple[int, int], TileResult] = {}
    unpacker = _Unpacker(z)
    for entry in meta["tiles"]:
        k = (int(entry["key"][0]), int(entry["key"][1]))
        if not (0 <= k[0] < grid.tiles_w and 0 <= k[1] < grid.tiles_h):
            raise VoxNavError(f"tile {k} lies outside its {grid.tiles_w} x {grid.tiles_h} grid")
        compact[k] = unpacker.take(CompactHeightfield, "compact", entry["compact"])
        _check_compact(compact[k], grid, config, k)
        _check_cropped(compact[k], grid, config, k)
        result = entry.get("result")
        if result is None:
            continue
        parts = {
            part: unpacker.take(cls, part, result[part])
            for part, cls in _PARTS.items()
            if part != "compact" and part in result
        }
        if parts.get("navdata") is not None:  # Detour trusts it: the .bin reader's checks
            binio.check_tile(parts["navdata"], f"tile {k}'s Detour data")
        tiles[k] = TileResult(
            tx=k[0],
            ty=k[1],
            input_tris=int(result["input_tris"]),
            hf_spans=int(result["hf_spans"]),
            nconts=int(result["nconts"]),
            warnings=list(result["warnings"]),
            **parts,
        )
    links = None
    if "offmesh_links" in meta:  # hand-made links (caches of older versions have none)
        links = _unflatten(OffMeshLinks, "offmesh_links", meta["offmesh_links"], z)
    auto = None
    if "auto_links" in meta:  # the bake's automatic links (caches of older versions have none)
        auto = _unflatten(OffMeshLinks, "auto_links", meta["auto_links"], z)
    bake = TiledBake(config, grid, list(tiles.values()))
    bake.offmesh_links = (
        links if auto is None else (links or OffMeshLinks.empty()).concatenate(auto)
    )
    cache = TileCache(config, grid, compact, tiles, bake.navmesh(), links, auto)
    if with_obstacles:
        _add_obstacles(cache, meta["obstacles"])
        cache.update()
        cache.rebuild_count = 0
    return cache


def _add_obstacles(cache: TileCache, saved: list[dict]) -> None:
    """Add the saved obstacles under their saved ids (`ObstacleSet.restore`)."""
    shapes = {}
    for entry in saved:
        key = int(entry["id"])
        if key in shapes:
            raise ValueError(f"obstacle id {key} saved twice")
        shapes[key] = Obstacle(
            kind=entry["kind"],
            position=tuple(entry["position"]),
            size=tuple(entry["size"]),
            yaw=float(entry["yaw"]),
            area=int(entry["area"]),
        )
    cache.obstacles.restore(shapes)
    changes = cache.obstacles.take_changes()
    cache._mark(changes)
