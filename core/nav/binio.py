"""Detour's binary navmesh: RecastDemo's navmesh-set file ("MSET", version 1), write and read.

The file RecastDemo's ``Sample::saveAll`` writes and ``loadAll``, recast-navigation-js's
``importNavMesh``, DotRecast and other Detour runtimes load. Little-endian, 32-bit polygon refs
(Detour built without DT_POLYREF64, its default):

- ``NavMeshSetHeader`` (40 bytes): int32 magic 'MSET' (0x4D534554, bytes ``TESM``), int32 version
  1, int32 numTiles, then ``dtNavMeshParams``: float32 orig[3], tileWidth, tileHeight [wu],
  int32 maxTiles, maxPolys (per tile).
- per tile: ``NavMeshTileHeader`` (uint32 tileRef, int32 dataSize), then dataSize bytes laid out
  exactly as ``dtCreateNavMeshData`` lays them out, each section padded to 4 bytes:
  ``dtMeshHeader`` (100 bytes; magic 'DNAV', version 7), vertices (float32 x 3), ``dtPoly``
  (32 bytes), room for maxLinkCount ``dtLink`` (12 bytes, zero: Detour fills them on load),
  ``dtPolyDetail`` (12 bytes), detail vertices, detail triangles (4 bytes), ``dtBVNode``
  (16 bytes), ``dtOffMeshConnection`` (36 bytes).

RecastDemo saves tiles after loading them, so its files also carry the links Detour built in
memory (``dtPoly.firstLink`` and the link section); Detour rebuilds those on load, and this
module writes them as ``dtCreateNavMeshData`` leaves them (zero). Every other byte equals
RecastDemo's file.

Coordinates are Detour's Y-up frame (VoxNav's Z-up (x, y, z) is stored as (x, z, y)).
Tiles come from `core.nav.navdata.create_nav_mesh_data`. Writes are atomic: a temporary file
in the target folder, flushed to disk, then renamed over the target, so a failed write never
leaves a half-written or emptied file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import atomic
from ..errors import VoxNavError
from ..limits import MAX_COORDINATE, within_reach
from .navdata import (
    EXT_LINK,
    POLYTYPE_GROUND,
    POLYTYPE_OFFMESH_CONNECTION,
    VERTS_PER_POLYGON,
    NavMeshData,
    _ranges,
)
from .navmesh import NavMeshParams

F32 = np.float32

NAVMESHSET_MAGIC = ord("M") << 24 | ord("S") << 16 | ord("E") << 8 | ord("T")
NAVMESHSET_VERSION = 1
NAVMESH_MAGIC = ord("D") << 24 | ord("N") << 16 | ord("A") << 8 | ord("V")
NAVMESH_VERSION = 7
#: The file's first 4 bytes: "TESM" ('MSET' as a little-endian int32).
SET_HEADER_MAGIC_BYTES = NAVMESHSET_MAGIC.to_bytes(4, "little")

SET_HEADER = np.dtype(
    [
        ("magic", "<i4"),
        ("version", "<i4"),
        ("num_tiles", "<i4"),
        ("orig", "<f4", (3,)),
        ("tile_width", "<f4"),
        ("tile_height", "<f4"),
        ("max_tiles", "<i4"),
        ("max_polys", "<i4"),
    ]
)
TILE_HEADER = np.dtype([("tile_ref", "<u4"), ("data_size", "<i4")])
MESH_HEADER = np.dtype(
    [
        ("magic", "<i4"),
        ("version", "<i4"),
        ("x", "<i4"),
        ("y", "<i4"),
        ("layer", "<i4"),
        ("user_id", "<u4"),
        ("poly_count", "<i4"),
        ("vert_count", "<i4"),
        ("max_link_count", "<i4"),
        ("detail_mesh_count", "<i4"),
        ("detail_vert_count", "<i4"),
        ("detail_tri_count", "<i4"),
        ("bv_node_count", "<i4"),
        ("off_mesh_con_count", "<i4"),
        ("off_mesh_base", "<i4"),
        ("walkable_height", "<f4"),
        ("walkable_radius", "<f4"),
        ("walkable_climb", "<f4"),
        ("bmin", "<f4", (3,)),
        ("bmax", "<f4", (3,)),
        ("bv_quant_factor", "<f4"),
    ]
)
POLY = np.dtype(
    [
        ("first_link", "<u4"),
        ("verts", "<u2", (VERTS_PER_POLYGON,)),
        ("neis", "<u2", (VERTS_PER_POLYGON,)),
        ("flags", "<u2"),
        ("vert_count", "u1"),
        ("area_and_type", "u1"),
    ]
)
LINK_SIZE = 12  # dtLink with 32-bit refs: ref, next, edge, side, bmin, bmax
POLY_DETAIL = np.dtype(
    [
        ("vert_base", "<u4"),
        ("tri_base", "<u4"),
        ("vert_count", "u1"),
        ("tri_count", "u1"),
        ("pad", "u1", (2,)),
    ]
)
BV_NODE = np.dtype([("bmin", "<u2", (3,)), ("bmax", "<u2", (3,)), ("i", "<i4")])
OFF_MESH_CON = np.dtype(
    [
        ("pos", "<f4", (6,)),
        ("rad", "<f4"),
        ("poly", "<u2"),
        ("flags", "u1"),
        ("side", "u1"),
        ("user_id", "<u4"),
    ]
)
OFF_MESH_CON_SIZE = OFF_MESH_CON.itemsize  # 36: float pos[6], rad; u16 poly; u8 flags, side; u32
#: Detour's "no polygon" marker for a link's "next" (DT_NULL_LINK); links are zero in files.
NULL_LINK = 0xFFFFFFFF

assert SET_HEADER.itemsize == 40 and TILE_HEADER.itemsize == 8
assert MESH_HEADER.itemsize == 100 and POLY.itemsize == 32
assert POLY_DETAIL.itemsize == 12 and BV_NODE.itemsize == 16 and OFF_MESH_CON.itemsize == 36


@dataclass
class NavMeshSet:
    """A navmesh-set file's content: its params, tiles and each tile's ref."""

    params: NavMeshParams
    tiles: list[NavMeshData] = field(default_factory=list)
    #: uint32 ref of each tile (salt, tile index; polygon index 0), as the file stores them.
    tile_refs: list[int] = field(default_factory=list)


def _align4(n: int) -> int:
    return (n + 3) & ~3


def _ilog2_next_pow2(v: int) -> int:
    """dtIlog2(dtNextPow2(v)): bits needed for indices below v."""
    v = max(int(v), 1)
    return (v - 1).bit_length()


def solo_params(tile: NavMeshData) -> NavMeshParams:
    """The params ``dtNavMesh::init(data)`` derives for a one-tile (solo) navmesh."""
    return NavMeshParams(
        orig=np.asarray(tile.bmin, dtype=F32).copy(),
        tile_width=float(F32(tile.bmax[0]) - F32(tile.bmin[0])),
        tile_height=float(F32(tile.bmax[2]) - F32(tile.bmin[2])),
        max_tiles=1,
        max_polys=tile.npolys,
    )


def tile_ref(params: NavMeshParams, tile_index: int, salt: int = 1) -> int:
    """The ref Detour gives tile ``tile_index`` (``encodePolyId(salt, it, 0)``, 32-bit refs).

    A fresh ``dtNavMesh`` hands out tile slots 0, 1, 2, ... with salt 1, so this is the ref
    RecastDemo's saveAll writes for the i-th tile added. Raises VoxNavError when the params
    leave fewer than 10 salt bits (Detour's init fails then).
    """
    tile_bits = _ilog2_next_pow2(params.max_tiles)
    poly_bits = _ilog2_next_pow2(params.max_polys)
    salt_bits = min(31, 32 - tile_bits - poly_bits)
    if salt_bits < 10:
        raise VoxNavError(
            f"max_tiles {params.max_tiles} and max_polys {params.max_polys} leave {salt_bits} "
            "bits of Detour's 32-bit polygon ref for the salt (at least 10 needed): use fewer "
            "tiles or smaller tiles"
        )
    return (salt << (poly_bits + tile_bits)) | (tile_index << poly_bits)


def _sections(header: np.ndarray) -> list[tuple[str, int]]:
    """(name, padded byte size) of each section after the header, in Detour's order."""
    h = header
    return [
        ("verts", _align4(12 * int(h["vert_count"]))),
        ("polys", _align4(POLY.itemsize * int(h["poly_count"]))),
        ("links", _align4(LINK_SIZE * int(h["max_link_count"]))),
        ("detail_meshes", _align4(POLY_DETAIL.itemsize * int(h["detail_mesh_count"]))),
        ("detail_verts", _align4(12 * int(h["detail_vert_count"]))),
        ("detail_tris", _align4(4 * int(h["detail_tri_count"]))),
        ("bv", _align4(BV_NODE.itemsize * int(h["bv_node_count"]))),
        ("off_mesh", _align4(OFF_MESH_CON_SIZE * int(h["off_mesh_con_count"]))),
    ]


def tile_bytes(tile: NavMeshData) -> bytes:
    """The tile's bytes exactly as ``dtCreateNavMeshData`` builds them."""
    npolys, nverts = tile.npolys, tile.nverts
    header = np.zeros((), dtype=MESH_HEADER)
    header["magic"] = NAVMESH_MAGIC
    header["version"] = NAVMESH_VERSION
    header["x"], header["y"], header["layer"] = tile.tile_x, tile.tile_y, tile.layer
    header["user_id"] = tile.user_id
    header["poly_count"] = npolys
    header["vert_count"] = nverts
    header["max_link_count"] = tile.max_link_count
    header["detail_mesh_count"] = tile.detail_meshes.shape[0]
    header["detail_vert_count"] = tile.detail_verts.shape[0]
    header["detail_tri_count"] = tile.detail_tris.shape[0]
    header["bv_node_count"] = tile.bv_i.shape[0]
    header["off_mesh_con_count"] = tile.off_mesh_count
    header["off_mesh_base"] = tile.off_mesh_base
    header["walkable_height"] = tile.walkable_height
    header["walkable_radius"] = tile.walkable_radius
    header["walkable_climb"] = tile.walkable_climb
    header["bmin"] = tile.bmin
    header["bmax"] = tile.bmax
    header["bv_quant_factor"] = tile.bv_quant_factor

    polys = np.zeros(npolys, dtype=POLY)
    polys["verts"] = tile.poly_verts
    polys["neis"] = tile.poly_neis
    polys["flags"] = tile.poly_flags
    polys["vert_count"] = tile.poly_vert_count
    polys["area_and_type"] = (tile.poly_area & 0x3F) | (tile.poly_type.astype(np.uint8) << 6)
    details = np.zeros(tile.detail_meshes.shape[0], dtype=POLY_DETAIL)
    details["vert_base"] = tile.detail_meshes[:, 0]
    details["tri_base"] = tile.detail_meshes[:, 1]
    details["vert_count"] = tile.detail_meshes[:, 2]
    details["tri_count"] = tile.detail_meshes[:, 3]
    nodes = np.zeros(tile.bv_i.shape[0], dtype=BV_NODE)
    nodes["bmin"] = tile.bv_bmin
    nodes["bmax"] = tile.bv_bmax
    nodes["i"] = tile.bv_i
    cons = np.zeros(tile.off_mesh_count, dtype=OFF_MESH_CON)
    cons["pos"] = tile.off_mesh_pos
    cons["rad"] = tile.off_mesh_rad
    cons["poly"] = tile.off_mesh_poly
    cons["flags"] = tile.off_mesh_flags
    cons["side"] = tile.off_mesh_side
    cons["user_id"] = tile.off_mesh_user_id

    payload = {
        "verts": np.ascontiguousarray(tile.verts, dtype="<f4").tobytes(),
        "polys": polys.tobytes(),
        "links": b"",
        "detail_meshes": details.tobytes(),
        "detail_verts": np.ascontiguousarray(tile.detail_verts, dtype="<f4").tobytes(),
        "detail_tris": np.ascontiguousarray(tile.detail_tris, dtype=np.uint8).tobytes(),
        "bv": nodes.tobytes(),
        "off_mesh": cons.tobytes(),
    }
    out = bytearray(header.tobytes())
    for name, size in _sections(header):
        chunk = payload[name]
        out += chunk + bytes(size - len(chunk))
    return bytes(out)


def navmesh_set_bytes(tiles: Sequence[NavMeshData], params: NavMeshParams | None = None) -> bytes:
    """A whole navmesh-set file in memory; params default to `solo_params` of a single tile."""
    tiles = list(tiles)
    if not tiles:
        raise VoxNavError("no navmesh tiles to write: bake a navigation mesh first")
    if params is None:
        if len(tiles) != 1:
            raise VoxNavError(
                f"{len(tiles)} tiles need the tile grid's NavMeshParams (orig, tile size, "
                "max tiles, max polys): pass params"
            )
        params = solo_params(tiles[0])
    if len(tiles) > params.max_tiles:
        raise VoxNavError(f"{len(tiles)} tiles do not fit max_tiles {params.max_tiles}")
    worst = max(t.npolys for t in tiles)
    if worst > params.max_polys:
        raise VoxNavError(f"a tile has {worst} polygons, more than max_polys {params.max_polys}")
    header = np.zeros((), dtype=SET_HEADER)
    header["magic"] = NAVMESHSET_MAGIC
    header["version"] = NAVMESHSET_VERSION
    header["num_tiles"] = len(tiles)
    header["orig"] = params.orig
    header["tile_width"] = params.tile_width
    header["tile_height"] = params.tile_height
    header["max_tiles"] = params.max_tiles
    header["max_polys"] = params.max_polys
    parts = [header.tobytes()]
    for index, tile in enumerate(tiles):
        data = tile_bytes(tile)
        tile_header = np.zeros((), dtype=TILE_HEADER)
        tile_header["tile_ref"] = tile_ref(params, index)
        tile_header["data_size"] = len(data)
        parts += [tile_header.tobytes(), data]
    return b"".join(parts)


def write_atomic(path, data: bytes) -> None:
    """Write ``data`` to ``path`` all or nothing, with `core.atomic` (temp file in the same
    folder, fsync, rename; a new file gets mode 0o666 less the umask, a replaced one keeps its
    mode). Raises VoxNavError (naming the path) when the folder is missing or not writable, the
    target is not a regular file, or the disk is full; the old file, if any, is then left as it
    was and no temp file remains."""
    with atomic.open_replacing(path, "wb") as fh:
        fh.write(data)


def write_navmesh_set(
    path, tiles: Sequence[NavMeshData], params: NavMeshParams | None = None
) -> None:
    """Write tiles as RecastDemo's navmesh-set file (atomically), one dtCreateNavMeshData tile
    each; tile i gets Detour's ref for slot i. params: the tile grid (default: `solo_params`
    of a single tile)."""
    write_atomic(path, navmesh_set_bytes(tiles, params))


def _tile_from_bytes(buf: memoryview, where: str) -> NavMeshData:
    """Parse one tile's dtCreateNavMeshData bytes; ``where`` names it in error messages."""
    if len(buf) < MESH_HEADER.itemsize:
        raise VoxNavError(f"{where}: truncated ({len(buf)} bytes, a tile header needs 100)")
    header = np.frombuffer(buf, dtype=MESH_HEADER, count=1)[0]
    if int(header["magic"]) != NAVMESH_MAGIC:
        raise VoxNavError(f"{where}: not Detour tile data (magic {int(header['magic']):#010x})")
    if int(header["version"]) != NAVMESH_VERSION:
        raise VoxNavError(
            f"{where}: Detour tile data version {int(header['version'])}, expected "
            f"{NAVMESH_VERSION}: re-export it with a current Detour"
        )
    counts = (
        "poly_count vert_count max_link_count detail_mesh_count detail_vert_count "
        "detail_tri_count bv_node_count off_mesh_con_count"
    ).split()
    for name in counts:
        if int(header[name]) < 0:
            raise VoxNavError(f"{where}: negative {name} {int(header[name])}: corrupt file")
    ncons = int(header["off_mesh_con_count"])
    if int(header["off_mesh_base"]) != int(header["poly_count"]) - ncons:
        raise VoxNavError(
            f"{where}: off-mesh base {int(header['off_mesh_base'])} is not polygon count "
            f"{int(header['poly_count'])} - off-mesh count {ncons}: corrupt file"
        )
    sizes = _sections(header)
    needed = MESH_HEADER.itemsize + sum(size for _, size in sizes)
    if needed != len(buf):
        raise VoxNavError(
            f"{where}: its header needs {needed} bytes, the tile holds {len(buf)}: truncated, "
            "corrupt, or written by a Detour with 64-bit polygon refs (DT_POLYREF64)"
        )
    offset = MESH_HEADER.itemsize
    section = {}
    for name, size in sizes:
        section[name] = buf[offset : offset + size]
        offset += size
    npolys = int(header["poly_count"])
    polys = np.frombuffer(section["polys"], dtype=POLY, count=npolys)
    details = np.frombuffer(
        section["detail_meshes"], dtype=POLY_DETAIL, count=int(header["detail_mesh_count"])
    )
    nodes = np.frombuffer(section["bv"], dtype=BV_NODE, count=int(header["bv_node_count"]))
    detail_meshes = np.stack(
        [details["vert_base"], details["tri_base"], details["vert_count"], details["tri_count"]],
        axis=1,
    ).astype(np.uint32)
    cons = np.frombuffer(section["off_mesh"], dtype=OFF_MESH_CON, count=ncons)
    _check_indices(where, header, polys, details, nodes, cons)
    tile = NavMeshData(
        tile_x=int(header["x"]),
        tile_y=int(header["y"]),
        layer=int(header["layer"]),
        user_id=int(header["user_id"]),
        bmin=np.array(header["bmin"], dtype=F32),
        bmax=np.array(header["bmax"], dtype=F32),
        walkable_height=float(header["walkable_height"]),
        walkable_radius=float(header["walkable_radius"]),
        walkable_climb=float(header["walkable_climb"]),
        bv_quant_factor=float(header["bv_quant_factor"]),
        max_link_count=int(header["max_link_count"]),
        verts=np.frombuffer(section["verts"], dtype="<f4", count=3 * int(header["vert_count"]))
        .reshape(-1, 3)
        .astype(F32),
        poly_verts=polys["verts"].astype(np.uint16),
        poly_neis=polys["neis"].astype(np.uint16),
        poly_flags=polys["flags"].astype(np.uint16),
        poly_vert_count=polys["vert_count"].copy(),
        poly_area=(polys["area_and_type"] & 0x3F).astype(np.uint8),
        poly_type=(polys["area_and_type"] >> 6).astype(np.uint8),
        detail_meshes=detail_meshes.reshape(-1, 4),
        detail_verts=np.frombuffer(
            section["detail_verts"], dtype="<f4", count=3 * int(header["detail_vert_count"])
        )
        .reshape(-1, 3)
        .astype(F32),
        detail_tris=np.frombuffer(
            section["detail_tris"], dtype=np.uint8, count=4 * int(header["detail_tri_count"])
        )
        .reshape(-1, 4)
        .copy(),
        bv_bmin=nodes["bmin"].astype(np.uint16).reshape(-1, 3),
        bv_bmax=nodes["bmax"].astype(np.uint16).reshape(-1, 3),
        bv_i=nodes["i"].astype(np.int32),
        off_mesh_pos=cons["pos"].astype(F32).reshape(-1, 6),
        off_mesh_rad=cons["rad"].astype(F32),
        off_mesh_poly=cons["poly"].astype(np.uint16),
        off_mesh_flags=cons["flags"].astype(np.uint8),
        off_mesh_side=cons["side"].astype(np.uint8),
        off_mesh_user_id=cons["user_id"].astype(np.uint32),
    )
    _check_detail_tris(where, tile)
    _check_numbers(where, tile)
    return tile


def _check_numbers(where: str, tile: NavMeshData) -> None:
    """Refuse a tile whose floats are not finite (the queries turn them into cells and
    indices): its bounds, quantisation, agent sizes, vertices and off-mesh links."""
    floats = {
        "its bounds": np.concatenate([tile.bmin, tile.bmax]),
        "its agent sizes or BV quantisation": np.array(
            [tile.walkable_height, tile.walkable_radius, tile.walkable_climb,
             tile.bv_quant_factor]
        ),
        "its vertices": tile.verts,
        "its detail vertices": tile.detail_verts,
        "its off-mesh links": np.concatenate([tile.off_mesh_pos.ravel(), tile.off_mesh_rad]),
    }  # fmt: skip
    for what, values in floats.items():
        if not np.isfinite(values).all():
            raise VoxNavError(f"{where}: {what} hold a number that is not finite: corrupt file")
        # Finite but far beyond any world (3.4e38): the queries' cell arithmetic overflows.
        if not within_reach(np.asarray(values, dtype=np.float64)).all():
            raise VoxNavError(
                f"{where}: {what} hold a number beyond +-{MAX_COORDINATE:g}: corrupt file"
            )
    if (tile.bmin > tile.bmax).any():
        raise VoxNavError(f"{where}: its bounds are inverted (min above max): corrupt file")
    extent = float(np.max(np.asarray(tile.bmax, np.float64) - np.asarray(tile.bmin, np.float64)))
    if not 0 < float(tile.bv_quant_factor) or float(tile.bv_quant_factor) * extent >= 2**31:
        raise VoxNavError(
            f"{where}: its BV quantisation {float(tile.bv_quant_factor):g} does not fit its "
            "bounds: corrupt file"
        )


def _check_indices(where: str, header, polys, details, nodes, cons) -> None:
    """Refuse a tile whose indices point outside its own arrays (Detour trusts them; a bit
    flipped on disk would send a query past an array's end): polygon vertices and
    neighbours, detail sub-meshes and their triangles, BV-tree nodes (and their boxes, never
    inverted in a tree Detour built), off-mesh polygons."""

    def check(ok, what: str) -> None:
        if not bool(np.all(ok)):
            raise VoxNavError(f"{where}: {what}: corrupt file")

    npolys = int(header["poly_count"])
    nverts = int(header["vert_count"])
    kind = polys["area_and_type"] >> 6
    count = polys["vert_count"].astype(np.int64)
    check(kind <= POLYTYPE_OFFMESH_CONNECTION, "a polygon of unknown type")
    ground = kind == POLYTYPE_GROUND
    check(
        np.where(ground, (count >= 3) & (count <= VERTS_PER_POLYGON), count == 2),
        "a polygon with a vertex count outside 3..6 (2 for an off-mesh link)",
    )
    used = np.arange(VERTS_PER_POLYGON)[None, :] < count[:, None]
    check(~used | (polys["verts"] < nverts), f"a polygon vertex outside 0..{nverts - 1}")
    neis = polys["neis"].astype(np.int64)
    portal = (neis & EXT_LINK) != 0
    check(
        ~used | np.where(portal, (neis & ~EXT_LINK) <= 0xFF, neis <= npolys),
        f"a polygon neighbour outside 1..{npolys}",
    )
    nground = int(np.count_nonzero(ground))
    check(details.shape[0] in (0, nground), "detail sub-meshes do not match the polygons")
    if details.shape[0]:
        vb, vc = details["vert_base"].astype(np.int64), details["vert_count"].astype(np.int64)
        tb, tc = details["tri_base"].astype(np.int64), details["tri_count"].astype(np.int64)
        check(vb + vc <= int(header["detail_vert_count"]), "a detail sub-mesh past its vertices")
        check(tb + tc <= int(header["detail_tri_count"]), "a detail sub-mesh past its triangles")
    nodes_i = nodes["i"].astype(np.int64)
    check(nodes["bmin"] <= nodes["bmax"], "a BV-tree node with an inverted box")
    at = np.arange(nodes_i.shape[0])
    check(
        np.where(nodes_i >= 0, nodes_i < max(npolys, 1), at - nodes_i <= nodes_i.shape[0]),
        "a BV-tree node outside the tree or the polygons",
    )
    base = int(header["off_mesh_base"])
    check((cons["poly"] >= base) & (cons["poly"] < npolys), "an off-mesh link's polygon")


def _check_detail_tris(where: str, tile: NavMeshData) -> None:
    """Each detail triangle's corners index its polygon's vertices and its sub-mesh's own."""
    meshes = tile.detail_meshes.astype(np.int64)
    if not meshes.shape[0]:
        return
    ground = np.flatnonzero(tile.poly_type == POLYTYPE_GROUND)
    corners = tile.poly_vert_count[ground].astype(np.int64) + meshes[:, 2]
    per_tri = np.repeat(corners, meshes[:, 3])
    rows = _ranges(meshes[:, 1], meshes[:, 3])
    if rows.shape[0] and not bool((tile.detail_tris[rows, :3] < per_tri[:, None]).all()):
        raise VoxNavError(f"{where}: a detail triangle corner outside its sub-mesh: corrupt file")


def check_tile(tile: NavMeshData, where: str) -> None:
    """Refuse (`VoxNavError` naming ``where``) a tile whose numbers or indices the .bin
    reader would refuse: it is written as Detour bytes and read back with every check (a
    saved tile cache's Detour data is trusted by the queries as Detour trusts it)."""
    try:
        data = tile_bytes(tile)
    except (ValueError, TypeError, IndexError, OverflowError) as exc:
        raise VoxNavError(f"{where}: its arrays do not make a Detour tile ({exc})") from None
    _tile_from_bytes(memoryview(data), where)


def navmesh_set_from_bytes(data: bytes, where: str = "navmesh file") -> NavMeshSet:
    """Parse a navmesh-set file's bytes; raises VoxNavError naming ``where`` for anything that
    is not a version-1 'MSET' file with Detour version-7 tiles, or is cut short."""
    buf = memoryview(data)
    if len(buf) < 4 or bytes(buf[:4]) != SET_HEADER_MAGIC_BYTES:
        start = bytes(buf[:8])
        what = "an empty file" if len(buf) == 0 else f"it starts with {start!r}"
        raise VoxNavError(
            f"{where} is not a Detour navmesh set (RecastDemo's 'MSET' .bin): {what}. "
            "Export the navmesh again as 'Detour .bin'"
        )
    if len(buf) < SET_HEADER.itemsize:
        raise VoxNavError(
            f"{where} is truncated: {len(buf)} bytes, the navmesh-set header alone needs "
            f"{SET_HEADER.itemsize}"
        )
    header = np.frombuffer(buf, dtype=SET_HEADER, count=1)[0]
    version = int(header["version"])
    if version != NAVMESHSET_VERSION:
        raise VoxNavError(
            f"{where} is a navmesh set of version {version}, expected {NAVMESHSET_VERSION}: "
            "written by another tool or version; export it again as 'Detour .bin'"
        )
    num_tiles = int(header["num_tiles"])
    if num_tiles < 0:
        raise VoxNavError(f"{where}: negative tile count {num_tiles}: corrupt file")
    params = NavMeshParams(
        orig=np.array(header["orig"], dtype=F32),
        tile_width=float(header["tile_width"]),
        tile_height=float(header["tile_height"]),
        max_tiles=int(header["max_tiles"]),
        max_polys=int(header["max_polys"]),
    )
    result = NavMeshSet(params=params)
    offset = SET_HEADER.itemsize
    for index in range(num_tiles):
        if offset + TILE_HEADER.itemsize > len(buf):
            raise VoxNavError(
                f"{where} is truncated: tile {index} of {num_tiles} is missing "
                f"({len(buf)} bytes in the file)"
            )
        tile_header = np.frombuffer(buf, dtype=TILE_HEADER, count=1, offset=offset)[0]
        offset += TILE_HEADER.itemsize
        size = int(tile_header["data_size"])
        ref = int(tile_header["tile_ref"])
        if ref == 0 or size <= 0:
            raise VoxNavError(f"{where}: tile {index} has no ref or no data: corrupt file")
        if offset + size > len(buf):
            raise VoxNavError(
                f"{where} is truncated: tile {index} needs {size} bytes, "
                f"{len(buf) - offset} are left"
            )
        tile = _tile_from_bytes(buf[offset : offset + size], f"{where}, tile {index}")
        offset += size
        result.tiles.append(tile)
        result.tile_refs.append(ref)
    return result


def read_navmesh_set(path) -> NavMeshSet:
    """Read a navmesh-set file (see the module docstring); VoxNavError for a missing file, a
    file from another tool or version, or a truncated one."""
    target = Path(path)
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise VoxNavError(f"cannot read {target}: {exc.strerror or exc}") from None
    return navmesh_set_from_bytes(data, str(target))
