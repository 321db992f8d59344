"""Navigation mesh export: Wavefront OBJ (to look at) and a documented JSON (for game engines).

Inputs are a polygon mesh (``core.polymesh.PolyMesh`` or any object with its fields: ``verts``
uint16 (n, 3) as (x, height, grid-row) in cells, ``polys`` uint16 (npolys, 2*nvp), ``regs``,
``flags``, ``areas``, ``nvp``, ``bmin``/``bmax`` float32 Z-up, ``cs``, ``ch``) and optionally
its `core.detail.PolyMeshDetail`.

World positions of polygon vertices are Detour's: ``bmin + (x*cs, row*cs, height*ch)`` (no
extra cell-height offset); detail vertices are stored as the detail mesh holds them (Recast
raises them by one cell height).

**OBJ** (`write_obj`): Y-up, as OBJ readers and game engines expect, with Blender's OBJ axis
convention (forward -Z, up Y): a Z-up world point (x, y, z) is written as (x, z, -y), so
importing the file into Blender with default settings puts it back where it was. Object
``navmesh`` holds the polygons as n-gons, object ``detail`` (optional) the detail triangles.
Faces are counter-clockwise seen from above (normals point up).

**JSON** (`write_json` / `navmesh_to_dict` / `read_navmesh_json`): Z-up world coordinates
(Blender's frame; a Y-up engine maps (x, y, z) -> (x, z, -y)), format ``"voxnav-navmesh"``
version 1. Keys:

- ``format``, ``version``, ``units`` ("world units (Blender: metres)"), ``axes``
  ("Z-up right-handed; polygons on the X/Y plane").
- ``cell_size``, ``cell_height`` [wu]; ``bmin``, ``bmax`` [x, y, z] [wu];
  ``max_verts_per_poly`` (nvp).
- ``vertices``: [[x, y, z], ...] world positions of the polygon vertices [wu].
- ``vertices_cells``: [[x, row, height], ...] the same vertices as integers (x and row in
  cells, height in cell heights), exact.
- ``polygons``: [[v0, v1, ...], ...] vertex indices per polygon, Recast's order
  (clockwise seen from above in this Z-up frame).
- ``neighbours``: per polygon, per edge k (from vertex k to vertex k+1), the index of the
  polygon across it, or -1 for none (a wall or the mesh's outer edge).
- ``regions``, ``areas`` (0 = null, 63 = walkable, 1..62 user types), ``flags``: per polygon.
- ``detail`` (only with a detail mesh): per polygon ``{"vertices": [[x, y, z], ...],
  "triangles": [[a, b, c, edge_flags], ...]}``; triangle indices are local to the polygon's
  list; its first vertices are the polygon's own; edge_flags bits 0, 2, 4 are set when edge
  ab, bc, ca lies on the polygon outline.
- ``paths`` (only when test paths were asked for, e.g. the Blender command's ``--path``): a
  list of ``{"start": [x, y, z], "goal": [x, y, z], "status": text, "length": wu,
  "polygons": count, "points": [[x, y, z], ...]}``, each the straight path on the navmesh from
  start to goal (the corners where it turns, start and end included).
- ``offmesh_links`` (only when the bake has off-mesh links, hand-made or automatic): a list
  of ``{"start": [x, y, z], "end": [x, y, z], "radius": wu, "bidirectional": bool, "area":
  0..63, "flags": 0..65535, "user_id": int}``, Detour's dtOffMeshConnection inputs (the
  .obj export has them as line elements in object ``offmesh_links``, the .bin as the tile's
  off-mesh connections).

Float values are float32 written with enough digits to read back bit-exact.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from . import atomic
from .detail import PolyMeshDetail
from .errors import VoxNavError
from .limits import MAX_COORDINATE, within_reach

F32 = np.float32
MESH_NULL_IDX = 0xFFFF
FORMAT = "voxnav-navmesh"
VERSION = 1


def _poly_arrays(pmesh):
    """Validated (verts u16 (n,3), polys u16 (npolys, 2nvp), nvp, counts (npolys,))."""
    if pmesh is None:
        raise VoxNavError("no navigation mesh to export: bake one first")
    try:
        verts = np.asarray(pmesh.verts)
        polys = np.asarray(pmesh.polys)
        nvp = int(pmesh.nvp)
    except AttributeError as exc:
        raise VoxNavError(f"not a polygon mesh: {exc}") from None
    if verts.ndim != 2 or verts.shape[1] != 3:
        raise VoxNavError(f"polygon mesh verts must have shape (n, 3), got {verts.shape}")
    if nvp < 3:
        raise VoxNavError(f"polygon mesh nvp must be at least 3, got {nvp}")
    if polys.ndim != 2 or polys.shape[1] != 2 * nvp:
        raise VoxNavError(
            f"polygon mesh polys must have shape (npolys, {2 * nvp}), got {polys.shape}"
        )
    if polys.shape[0] == 0 or verts.shape[0] == 0:
        raise VoxNavError(
            "the navigation mesh is empty (no walkable polygons): check the walkable "
            "settings (agent height, radius, slope) and that the geometry has floors"
        )
    ids = polys[:, :nvp].astype(np.int64)
    valid = ids != MESH_NULL_IDX
    counts = np.argmin(np.concatenate([valid, np.zeros((ids.shape[0], 1), bool)], 1), 1)
    if (counts < 3).any():
        raise VoxNavError(f"polygon {int(np.flatnonzero(counts < 3)[0])} has fewer than 3 vertices")
    if int(ids[valid].max()) >= verts.shape[0]:
        raise VoxNavError("polygon mesh polys refer to a vertex index beyond its verts")
    for name in ("regs", "flags", "areas"):
        arr = np.asarray(getattr(pmesh, name, np.zeros(polys.shape[0])))
        if arr.shape != (polys.shape[0],):
            raise VoxNavError(
                f"polygon mesh {name} must have shape ({polys.shape[0]},), got {arr.shape}"
            )
    return verts.astype(np.uint16), polys.astype(np.uint16), nvp, counts


def _detail_arrays(dmesh, npolys):
    if dmesh is None:
        return None
    try:
        meshes = np.asarray(dmesh.meshes)
        dverts = np.asarray(dmesh.verts)
        dtris = np.asarray(dmesh.tris)
    except AttributeError as exc:
        raise VoxNavError(f"not a detail mesh: {exc}") from None
    if meshes.shape != (npolys, 4):
        raise VoxNavError(f"detail meshes must have shape ({npolys}, 4), got {meshes.shape}")
    if dverts.ndim != 2 or dverts.shape[1] != 3:
        raise VoxNavError(f"detail verts must have shape (n, 3), got {dverts.shape}")
    if dtris.ndim != 2 or dtris.shape[1] != 4:
        raise VoxNavError(f"detail tris must have shape (n, 4), got {dtris.shape}")
    m = meshes.astype(np.int64)
    if ((m[:, 0] + m[:, 1]) > dverts.shape[0]).any() or (
        (m[:, 2] + m[:, 3]) > dtris.shape[0]
    ).any():
        raise VoxNavError("detail meshes refer to vertices or triangles beyond the arrays")
    return m, dverts.astype(F32), dtris.astype(np.int64)


def _world(pmesh, verts):
    cs, ch = F32(pmesh.cs), F32(pmesh.ch)
    bmin = np.asarray(pmesh.bmin, dtype=F32).reshape(3)
    v = verts.astype(F32)
    out = np.empty((v.shape[0], 3), dtype=F32)
    out[:, 0] = bmin[0] + v[:, 0] * cs
    out[:, 1] = bmin[1] + v[:, 2] * cs
    out[:, 2] = bmin[2] + v[:, 1] * ch
    return out


def _f(x) -> str:
    """Shortest text that reads back as the same float32."""
    return np.format_float_positional(F32(x), unique=True, trim="-")


def _path(path):
    """A file name as given, or decoded from bytes (`pathlib` takes no bytes)."""
    return os.fsdecode(path) if isinstance(path, bytes) else path


def _check_links(offmesh) -> None:
    """Refuse ``offmesh`` that is neither None nor `core.offmesh.OffMeshLinks`."""
    from .offmesh import OffMeshLinks

    if offmesh is not None and not isinstance(offmesh, OffMeshLinks):
        raise VoxNavError(
            "offmesh must be core.offmesh.OffMeshLinks (OffMeshLinks.create) or None, got "
            f"{type(offmesh).__name__}"
        )


def write_obj(
    path,
    pmesh,
    dmesh=None,
    *,
    offmesh=None,
    batch: atomic.Batch | None = None,
    frame: str = "engine",
) -> None:
    """Write the navmesh polygons (and optionally the detail triangles) as a Y-up OBJ.

    ``path``: file to write (its folder must exist); it is replaced only when complete (see
    `core.atomic`; with ``batch``, when the batch commits). Axis convention: Blender's OBJ
    (x, z, -y); object ``navmesh`` = polygons as n-gons, object ``detail`` = detail triangles,
    object ``offmesh_links`` = one line element (start, end) per off-mesh link (``offmesh``,
    `core.offmesh.OffMeshLinks`, if given and not empty). ``frame`` "recast": the bake read
    its OBJ with ``--recast-frame`` (RecastDemo's mirrored reading, x z y): the navmesh is
    written back in that OBJ's own coordinates (x, z, y), over its input (as the .bin is).
    Faces are counter-clockwise seen from above (normals up) either way.
    """
    path = _path(path)
    if frame not in DETOUR_FRAMES:
        raise VoxNavError(f"unknown OBJ frame {frame!r}: use one of {DETOUR_FRAMES}")
    _check_links(offmesh)
    verts, polys, nvp, counts = _poly_arrays(pmesh)
    detail = _detail_arrays(dmesh, polys.shape[0])
    atomic.check_target(path)
    world = _world(pmesh, verts)
    recast = frame == "recast"

    def points(rows) -> list[str]:
        if recast:  # the OBJ's own coordinates: a mirror, so the winding below stays
            return [f"v {_f(x)} {_f(z)} {_f(y)}" for x, y, z in rows]
        return [f"v {_f(x)} {_f(z)} {_f(-y)}" for x, y, z in rows]

    lines = [
        "# VoxNav navigation mesh",
        "# Y-up, the input OBJ's own frame (read with --recast-frame): world (x, y, z) as (x, z, y)"
        if recast
        else "# Y-up, Blender OBJ convention: Z-up world (x, y, z) written as (x, z, -y)",
        "# object navmesh: polygons (n-gons); object detail: height detail triangles",
        f"# polygons {polys.shape[0]} vertices {verts.shape[0]}"
        + (f" detail_triangles {detail[2].shape[0]}" if detail is not None else ""),
        "o navmesh",
    ]
    lines += points(world.tolist())
    for row, n in zip(polys[:, :nvp].tolist(), counts.tolist(), strict=True):
        # Recast's polygons are clockwise seen from above in the Z-up frame: reversed by the
        # turn to Y-up, kept by the mirror to the recast frame.
        order = row[:n] if recast else reversed(row[:n])
        lines.append("f " + " ".join(str(i + 1) for i in order))
    if detail is not None:
        meshes, dverts, dtris = detail
        base = verts.shape[0]
        lines.append("o detail")
        lines += points(dverts.tolist())
        for vb, _vc, tb, tc in meshes.tolist():
            for a, b, c, _flags in dtris[tb : tb + tc].tolist():
                a, b, c = (a, b, c) if recast else (c, b, a)
                lines.append(f"f {base + vb + a + 1} {base + vb + b + 1} {base + vb + c + 1}")
    if offmesh is not None and len(offmesh):
        base = sum(1 for line in lines if line.startswith("v "))
        lines.append("o offmesh_links")
        ends = np.stack([offmesh.start, offmesh.end], axis=1).reshape(-1, 3)
        lines += points(ends.tolist())
        lines += [f"l {base + 2 * i + 1} {base + 2 * i + 2}" for i in range(len(offmesh))]
    with atomic.open_replacing(path, "w", batch=batch) as fh:
        fh.write("\n".join(lines) + "\n")


def offmesh_links_to_list(offmesh) -> list[dict]:
    """Off-mesh links (`core.offmesh.OffMeshLinks`) as the JSON ``offmesh_links`` entry: one
    dict per link with start, end (Z-up world), radius [Units: wu], bidirectional, area,
    flags and user_id."""
    return [
        {
            "start": [float(v) for v in offmesh.start[i]],
            "end": [float(v) for v in offmesh.end[i]],
            "radius": float(offmesh.radius[i]),
            "bidirectional": bool(offmesh.bidirectional[i]),
            "area": int(offmesh.area[i]),
            "flags": int(offmesh.flags[i]),
            "user_id": int(offmesh.user_id[i]),
        }
        for i in range(len(offmesh))
    ]


def offmesh_links_from_list(entries, where: str = "offmesh_links"):
    """The inverse of `offmesh_links_to_list` (validated; VoxNavError naming ``where``)."""
    from .offmesh import OffMeshLinks

    if not entries:
        return OffMeshLinks.empty()
    try:
        return OffMeshLinks.create(
            [e["start"] for e in entries],
            [e["end"] for e in entries],
            [e["radius"] for e in entries],
            [bool(e.get("bidirectional", True)) for e in entries],
            [e.get("area", 5) for e in entries],
            [e.get("flags", 8) for e in entries],
            [e.get("user_id", i) for i, e in enumerate(entries)],
        )
    except (KeyError, TypeError) as exc:
        raise VoxNavError(f"{where}: malformed off-mesh link entry ({exc!r})") from None


#: The JSON ``axes`` entry per frame (see `navmesh_to_dict`).
JSON_AXES = {
    "engine": "Z-up right-handed (Blender world); polygons on the X/Y plane",
    "recast": "Z-up, Recast's parity frame: the input OBJ read with --recast-frame, its "
    "(x, y, z) as (x, z, y) (a mirror of Blender's import of that file); polygons on the X/Y "
    "plane",
}


def navmesh_to_dict(pmesh, dmesh=None, paths=None, offmesh=None, frame: str = "engine") -> dict:
    """The JSON document (see the module docstring) as plain Python lists and numbers.

    paths: optional list of dicts already in the ``paths`` entry's form (plain numbers).
    offmesh: optional `core.offmesh.OffMeshLinks`, written as ``offmesh_links`` (see
    `offmesh_links_to_list`) when not empty. frame: "recast" for a bake of an OBJ read with
    ``--recast-frame``: the same numbers, its ``axes`` entry says which frame they are in."""
    if frame not in JSON_AXES:
        raise VoxNavError(f"unknown JSON frame {frame!r}: use one of {tuple(JSON_AXES)}")
    verts, polys, nvp, counts = _poly_arrays(pmesh)
    detail = _detail_arrays(dmesh, polys.shape[0])
    world = _world(pmesh, verts)
    nbr = polys[:, nvp:].astype(np.int64)
    nbr = np.where((nbr == MESH_NULL_IDX) | (nbr & 0x8000 != 0), -1, nbr)
    npolys = polys.shape[0]

    def floats(a):
        return [float(F32(x)) for x in np.asarray(a, dtype=F32).reshape(-1)]

    doc = {
        "format": FORMAT,
        "version": VERSION,
        "units": "world units (Blender: metres)",
        "axes": JSON_AXES[frame],
        "cell_size": float(F32(pmesh.cs)),
        "cell_height": float(F32(pmesh.ch)),
        "bmin": floats(pmesh.bmin),
        "bmax": floats(pmesh.bmax),
        "max_verts_per_poly": nvp,
        "vertices": [floats(v) for v in world],
        "vertices_cells": verts[:, [0, 2, 1]].astype(int).tolist(),
        "polygons": [
            row[:n] for row, n in zip(polys[:, :nvp].tolist(), counts.tolist(), strict=True)
        ],
        "neighbours": [row[:n] for row, n in zip(nbr.tolist(), counts.tolist(), strict=True)],
        "regions": np.asarray(getattr(pmesh, "regs", np.zeros(npolys))).astype(int).tolist(),
        "areas": np.asarray(getattr(pmesh, "areas", np.zeros(npolys))).astype(int).tolist(),
        "flags": np.asarray(getattr(pmesh, "flags", np.zeros(npolys))).astype(int).tolist(),
    }
    if detail is not None:
        meshes, dverts, dtris = detail
        doc["detail"] = [
            {
                "vertices": [floats(v) for v in dverts[vb : vb + vc]],
                "triangles": dtris[tb : tb + tc].tolist(),
            }
            for vb, vc, tb, tc in meshes.tolist()
        ]
    if offmesh is not None and len(offmesh):
        doc["offmesh_links"] = offmesh_links_to_list(offmesh)
    if paths:
        doc["paths"] = list(paths)
    return doc


def write_json(
    path,
    pmesh,
    dmesh=None,
    paths=None,
    *,
    offmesh=None,
    batch: atomic.Batch | None = None,
    frame: str = "engine",
) -> None:
    """Write `navmesh_to_dict` as JSON to ``path`` (its folder must exist); replaced only when
    complete (see `core.atomic`; with ``batch``, when the batch commits). ``frame``: see
    `navmesh_to_dict`."""
    path = _path(path)
    _check_links(offmesh)
    doc = navmesh_to_dict(pmesh, dmesh, paths, offmesh, frame)
    try:  # before the file opens: NaN or Infinity is no JSON (a strict parser refuses it)
        text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise VoxNavError(
            "the navmesh JSON would hold a NaN or infinite number (in the paths given?): "
            "JSON has none; give finite numbers"
        ) from None
    except TypeError as exc:
        raise VoxNavError(f"the navmesh JSON cannot hold the paths given: {exc}") from None
    atomic.check_target(path)
    with atomic.open_replacing(path, "w", batch=batch) as fh:
        fh.write(text)


def _all_ints(value) -> bool:
    """Whether ``value`` (parsed JSON) is an integer or (nested) lists of integers only
    (booleans, floats and text are not)."""
    if type(value) is int:
        return True
    return isinstance(value, list) and all(_all_ints(v) for v in value)


def read_navmesh_json(path):
    """Read a file written by `write_json`.

    Returns ``(pmesh, dmesh)``: ``pmesh`` a namespace with the polygon mesh fields (``verts``
    uint16 (n, 3) as (x, height, row) cells, ``polys`` uint16 (npolys, 2*nvp) with 0xFFFF for
    none, ``regs`` uint16, ``flags`` uint16, ``areas`` uint8, ``nvp``, ``bmin``/``bmax``
    float32 Z-up, ``cs``, ``ch``, ``border_size`` 0), ``dmesh`` a `PolyMeshDetail` or None.
    """
    path = Path(path)
    if not path.exists():
        raise VoxNavError(f"navmesh file {path} does not exist")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:  # arrays nested thousands deep
        raise VoxNavError(f"cannot read navmesh JSON {path}: it nests too deep") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: an int too long
        raise VoxNavError(f"cannot read navmesh JSON {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise VoxNavError(f"{path} is not a VoxNav navmesh JSON (format {FORMAT!r})")
    if doc.get("version") != VERSION:
        raise VoxNavError(f"{path} has navmesh JSON version {doc.get('version')}, need {VERSION}")

    def check(ok: bool, what: str) -> None:
        if not ok:
            raise VoxNavError(f"{path}: malformed navmesh JSON: {what}")

    def ints(values, what: str) -> np.ndarray:
        # JSON integers only: 1.5, "2" and true were read as 1, 2 and 1 (another mesh).
        check(_all_ints(values), f"{what} must be whole numbers")
        return np.asarray(values, dtype=np.int64)

    def coordinates(values, what: str) -> np.ndarray:
        # float64 here, float32 in the mesh: 1e300 passed as finite and became infinite.
        array = np.asarray(values, dtype=np.float64)
        check(bool(within_reach(array).all()), f"{what} must be within +-{MAX_COORDINATE:g}")
        return array

    try:
        nvp = int(ints(doc["max_verts_per_poly"], "max_verts_per_poly"))
        check(3 <= nvp <= 6, f"max_verts_per_poly must be 3..6, got {nvp}")
        cells = ints(doc["vertices_cells"], "vertices_cells").reshape(-1, 3)
        check(bool(((cells >= 0) & (cells < MESH_NULL_IDX)).all()), "a vertex cell is not 0..65534")
        npolys = len(doc["polygons"])
        polys = np.full((npolys, 2 * nvp), MESH_NULL_IDX, dtype=np.uint16)
        for i, (ids, nb) in enumerate(zip(doc["polygons"], doc["neighbours"], strict=True)):
            if not 3 <= len(ids) <= nvp or len(nb) != len(ids):
                raise VoxNavError(f"{path}: polygon {i} has a bad vertex or neighbour list")
            row_ids = ints(ids, f"polygon {i}'s vertices")
            row_nb = ints(nb, f"polygon {i}'s neighbours")
            check(
                bool(((row_ids >= 0) & (row_ids < cells.shape[0])).all()),
                f"polygon {i} refers to a vertex outside 0..{cells.shape[0] - 1}",
            )
            check(
                bool(((row_nb >= -1) & (row_nb < npolys)).all()),
                f"polygon {i} has a neighbour outside -1..{npolys - 1}",
            )
            polys[i, : len(ids)] = row_ids
            polys[i, nvp : nvp + len(nb)] = np.where(row_nb < 0, MESH_NULL_IDX, row_nb)
        bad_link = _non_adjacent_neighbour(polys, nvp)
        check(
            bad_link is None,
            f"polygon {bad_link and bad_link[0]}'s neighbour {bad_link and bad_link[1]} shares "
            "no edge with it (a query would walk between polygons that do not touch)",
        )
        per_poly = {}
        for name, top in (("regions", 0xFFFF), ("flags", 0xFFFF), ("areas", 0xFF)):
            values = ints(doc[name], name)
            check(values.shape == (npolys,), f"{name} must hold one value per polygon")
            check(bool(((values >= 0) & (values <= top)).all()), f"{name} must be 0..{top}")
            per_poly[name] = values
        bounds = [coordinates(doc[name], name) for name in ("bmin", "bmax")]
        for name, b in zip(("bmin", "bmax"), bounds, strict=True):
            check(b.shape == (3,), f"{name} must be 3 numbers")
        check(bool((bounds[0] <= bounds[1]).all()), "bmin must not lie above bmax")
        cs, ch = float(doc["cell_size"]), float(doc["cell_height"])
        for name, size in (("cell_size", cs), ("cell_height", ch)):  # > 0 as float32 too
            check(0 < size <= MAX_COORDINATE and F32(size) > 0, f"{name} must be > 0, got {size}")
        pmesh = SimpleNamespace(
            verts=cells[:, [0, 2, 1]].astype(np.uint16),
            polys=polys,
            regs=per_poly["regions"].astype(np.uint16),
            flags=per_poly["flags"].astype(np.uint16),
            areas=per_poly["areas"].astype(np.uint8),
            nvp=nvp,
            bmin=bounds[0].astype(F32),
            bmax=bounds[1].astype(F32),
            cs=F32(cs),
            ch=F32(ch),
            border_size=0,
        )
        dmesh = None
        if "detail" in doc:
            det = doc["detail"]
            if len(det) != npolys:
                raise VoxNavError(f"{path}: detail has {len(det)} meshes for {npolys} polygons")
            nv = np.array([len(d["vertices"]) for d in det], dtype=np.int64)
            nt = np.array([len(d["triangles"]) for d in det], dtype=np.int64)
            meshes = np.zeros((npolys, 4), dtype=np.uint32)
            meshes[:, 0] = np.concatenate([[0], np.cumsum(nv)[:-1]])
            meshes[:, 1] = nv
            meshes[:, 2] = np.concatenate([[0], np.cumsum(nt)[:-1]])
            meshes[:, 3] = nt
            dverts = coordinates([v for d in det for v in d["vertices"]], "a detail vertex")
            dtris = ints([t for d in det for t in d["triangles"]], "detail triangles")
            dverts, dtris = dverts.reshape(-1, 3), dtris.reshape(-1, 4)
            # A triangle's corners index its own polygon's detail vertices.
            tri_nv = np.repeat(nv, nt)
            check(
                bool(((dtris[:, :3] >= 0) & (dtris[:, :3] < tri_nv[:, None])).all()),
                "a detail triangle refers to a vertex its polygon's detail does not have",
            )
            check(bool(((dtris[:, 3] >= 0) & (dtris[:, 3] <= 0xFF)).all()), "bad triangle flags")
            dmesh = PolyMeshDetail(meshes, dverts.astype(F32), dtris.astype(np.uint8))
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as exc:
        if isinstance(exc, VoxNavError):
            raise
        raise VoxNavError(f"{path}: malformed navmesh JSON ({exc!r})") from None
    _poly_arrays(pmesh)
    return pmesh, dmesh


def _non_adjacent_neighbour(polys: np.ndarray, nvp: int) -> tuple[int, int] | None:
    """The first (polygon, neighbour) of ``polys`` (uint16 (n, 2 nvp), 0xFFFF for none) whose
    neighbour across an edge has no edge with the same two vertices, or None."""
    ids = polys[:, :nvp].astype(np.int64)
    count = (ids != MESH_NULL_IDX).sum(axis=1)
    poly, k = np.nonzero(ids != MESH_NULL_IDX)
    a = ids[poly, k]
    b = ids[poly, (k + 1) % count[poly]]
    edge = np.minimum(a, b) << 16 | np.maximum(a, b)  # vertices < 2**16
    have = poly << 32 | edge
    nb = polys[poly, nvp + k].astype(np.int64)
    linked = nb != MESH_NULL_IDX
    wanted = nb[linked] << 32 | edge[linked]
    missing = ~np.isin(wanted, have)
    if not missing.any():
        return None
    first = int(np.flatnonzero(missing)[0])
    return int(poly[linked][first]), int(nb[linked][first])


#: Axis conventions a Detour .bin can be written in (see `write_detour_bin`).
DETOUR_FRAMES = ("engine", "recast")


def write_detour_bin(
    path,
    pmesh,
    dmesh=None,
    *,
    agent_height: float,
    agent_radius: float,
    agent_max_climb: float,
    frame: str = "engine",
    offmesh=None,
    batch: atomic.Batch | None = None,
) -> None:
    """Write the navmesh as Detour's binary navmesh (RecastDemo's "MSET" .bin, one tile).

    ``offmesh``: `core.offmesh.OffMeshLinks` (Z-up world) stored as the tile's
    dtOffMeshConnections (`core.nav.navdata.create_nav_mesh_data`), or None.

    The file Detour runtimes load (RecastDemo, recast-navigation-js ``importNavMesh``,
    DotRecast); layout in `core.nav.binio`. ``agent_*`` are stored in the tile header
    [Units: wu]. ``frame``: "engine" writes Y-up as game engines, glTF and this module's OBJ
    do, Z-up (x, y, z) -> (x, z, -y) (the polygons are mirrored into Detour's winding);
    "recast" writes Recast's parity frame (x, z, y), the frame of an OBJ read with
    ``--recast-frame``. Areas and flags: RecastDemo's rule (walkable 63 -> area 0 "ground",
    flag 1 "walk"). Written atomically (`core.atomic`; with ``batch``, replaced when the batch
    commits): a failed write leaves any old file as it was.
    """
    from .nav import binio, navdata

    path = _path(path)
    _check_links(offmesh)
    if frame not in DETOUR_FRAMES:
        raise VoxNavError(f"unknown Detour frame {frame!r}: use one of {DETOUR_FRAMES}")
    _verts, polys, _nvp, _counts = _poly_arrays(pmesh)
    _detail_arrays(dmesh, polys.shape[0])
    sizes = {
        "agent_height": agent_height, "agent_radius": agent_radius,
        "agent_max_climb": agent_max_climb,
    }  # fmt: skip
    for name, value in sizes.items():
        # Stored in the tile header as float32: NaN or beyond float32 wrote a file Detour
        # (and our own reader) refuses as corrupt, over the old one.
        try:
            good = bool(within_reach(value)) and float(value) >= 0.0
        except (TypeError, ValueError):
            good = False
        if not good:
            raise VoxNavError(
                f"{name} must be a number from 0 to {MAX_COORDINATE:g} wu for the .bin's tile "
                f"header, got {value!r}"
            )
    atomic.check_target(path)
    tile = navdata.create_nav_mesh_data(
        pmesh,
        dmesh,
        walkable_height=agent_height,
        walkable_radius=agent_radius,
        walkable_climb=agent_max_climb,
        offmesh=offmesh,
    )
    if frame == "engine":
        tile = navdata.mirror_z(tile)
    with atomic.open_replacing(path, "wb", batch=batch) as fh:
        fh.write(binio.navmesh_set_bytes([tile]))


def write_tiled_detour_bin(
    path, bake, *, frame: str = "engine", batch: atomic.Batch | None = None
) -> None:
    """Write a tiled bake (`core.tiles.TiledBake`) as Detour's navmesh set, one tile per tile,
    with RecastDemo's dtNavMeshParams (orig = the world's bmin, tile size = tile_size * cs,
    max tiles and polygons per tile as RecastDemo computes them). Written atomically
    (`core.atomic`; with ``batch``, replaced when the batch commits).

    ``frame`` as `write_detour_bin`. In the "engine" frame (z -> -z) the tile rows are
    renumbered from the other side (tile_y -> tiles_h - 1 - tile_y) and the grid's origin
    moves to the mirrored far edge, so Detour's tile lookup still finds every tile.
    """
    from .nav import binio, navdata

    if frame not in DETOUR_FRAMES:
        raise VoxNavError(f"unknown Detour frame {frame!r}: use one of {DETOUR_FRAMES}")
    atomic.check_target(path)
    tiles = bake.navdata()
    if not tiles:
        raise VoxNavError(
            "the tiled navigation mesh is empty (no tile has polygons): nothing to export"
        )
    nav_params = bake.navmesh_params()
    params = binio.NavMeshParams(
        orig=np.asarray(nav_params.orig, dtype=F32).copy(),
        tile_width=nav_params.tile_width,
        tile_height=nav_params.tile_height,
        max_tiles=nav_params.max_tiles,
        max_polys=nav_params.max_polys,
    )
    if frame == "engine":
        rows = int(bake.grid.tiles_h)
        far = F32(params.orig[2] + F32(F32(rows) * F32(params.tile_height)))
        params.orig[2] = -far
        mirrored = []
        for tile in tiles:
            m = navdata.mirror_z(tile)
            m.tile_y = rows - 1 - int(tile.tile_y)
            mirrored.append(m)
        tiles = mirrored
    with atomic.open_replacing(path, "wb", batch=batch) as fh:
        fh.write(binio.navmesh_set_bytes(tiles, params))


#: File extensions `write_navmesh` knows, and what each writes.
NAVMESH_FORMATS = {".obj": "Wavefront OBJ", ".json": "VoxNav JSON", ".bin": "Detour .bin"}


def navmesh_format(path) -> str:
    """The navmesh format ``path``'s extension names: ".obj", ".json" or ".bin" (any case);
    VoxNavError naming the known extensions otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in NAVMESH_FORMATS:
        known = ", ".join(f"{ext} ({name})" for ext, name in NAVMESH_FORMATS.items())
        raise VoxNavError(f"cannot tell the navmesh format of {path}: use {known}")
    return suffix


def write_navmesh(
    path,
    pmesh,
    dmesh=None,
    *,
    config=None,
    recast_frame: bool = False,
    offmesh=None,
    batch: atomic.Batch | None = None,
) -> None:
    """Write the navmesh in the format its extension names (.obj, .json or .bin).

    ``offmesh``: off-mesh links (`core.offmesh.OffMeshLinks`) or None: OBJ line elements,
    the JSON ``offmesh_links`` entry, the .bin's dtOffMeshConnections.

    ``config``: the bake's `core.config.NavConfig` (the .bin stores its agent size; default
    settings if None). ``recast_frame``: the bake read its OBJ as RecastDemo does, so a .bin
    or .obj is written in that same frame (else in the engine frame, see `write_detour_bin`)
    and a .json says so in its ``axes``.
    ``batch``: an `core.atomic.Batch` that replaces the file when it commits.
    """
    path = _path(path)
    suffix = navmesh_format(path)
    frame = "recast" if recast_frame else "engine"
    if suffix == ".obj":
        write_obj(path, pmesh, dmesh, offmesh=offmesh, batch=batch, frame=frame)
    elif suffix == ".json":
        write_json(path, pmesh, dmesh, offmesh=offmesh, batch=batch, frame=frame)
    else:
        from .config import NavConfig

        cfg = config if config is not None else NavConfig()
        write_detour_bin(
            path,
            pmesh,
            dmesh,
            agent_height=cfg.agent_height,
            agent_radius=cfg.agent_radius,
            agent_max_climb=cfg.agent_max_climb,
            frame="recast" if recast_frame else "engine",
            offmesh=offmesh,
            batch=batch,
        )
