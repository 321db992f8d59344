"""Recast reference data (shared/reference/*.npz) turned into VoxNav's Z-up structures.

Recast is Y-up with its grid on X/Z; VoxNav cell (ix, iy) is Recast cell (x, z) and heights are
the same integers, so only the corner vectors swap their last two components.
"""

from __future__ import annotations

import functools

import numpy as np

from core.compact import CompactHeightfield
from core.heightfield import Heightfield

from ..conftest import require_shared

MESHES = ("dungeon", "nav_test")


@functools.cache
def load_reference(name: str) -> dict[str, np.ndarray]:
    path = require_shared(f"reference/{name}.npz")
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def mesh_path(name: str):
    return require_shared(f"meshes/{name}.obj")


def zup(vec) -> np.ndarray:
    v = np.asarray(vec, dtype=np.float32)
    return v[..., [0, 2, 1]].copy()


def ref_heightfield(ref: dict, stage: str = "lowheight") -> Heightfield:
    """The reference solid heightfield after ``stage`` (raster, lowhang, ledge, lowheight)."""
    width, height = int(ref["cfg_width"]), int(ref["cfg_height"])
    col = ref[f"hf_{stage}_x"].astype(np.int64) + ref[f"hf_{stage}_z"].astype(np.int64) * width
    col_start = np.zeros(width * height + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=width * height), out=col_start[1:])
    return Heightfield(
        width,
        height,
        zup(ref["cfg_bmin"]),
        zup(ref["cfg_bmax"]),
        np.float32(ref["cfg_cs"]),
        np.float32(ref["cfg_ch"]),
        col_start,
        ref[f"hf_{stage}_smin"].astype(np.uint16),
        ref[f"hf_{stage}_smax"].astype(np.uint16),
        ref[f"hf_{stage}_area"].astype(np.uint8),
    )


def ref_compact(ref: dict, with_regions: bool = True) -> CompactHeightfield:
    """The reference compact heightfield after erosion (areas eroded), with dist and regions."""
    width, height = int(ref["cfg_width"]), int(ref["cfg_height"])
    index = ref["chf_cell_index"].astype(np.int64).ravel()
    count = ref["chf_cell_count"].astype(np.int64).ravel()
    n = int(ref["chf_span_count"])
    cell_start = np.empty(width * height + 1, dtype=np.int64)
    cell_start[:-1] = np.where(count > 0, index, 0)
    cell_start[-1] = n
    # Empty columns carry index 0 in Recast; give them the start of the next column instead.
    starts = np.where(count > 0, index, n)
    cell_start[:-1] = np.minimum.accumulate(starts[::-1])[::-1]
    return CompactHeightfield(
        width=width,
        height=height,
        border_size=int(ref["chf_border_size"]),
        walkable_height=int(ref["chf_walkable_height"]),
        walkable_climb=int(ref["chf_walkable_climb"]),
        bmin=zup(ref["chf_bmin"]),
        bmax=zup(ref["chf_bmax"]),
        cs=np.float32(ref["cfg_cs"]),
        ch=np.float32(ref["cfg_ch"]),
        cell_start=cell_start,
        y=ref["chf_y"].astype(np.uint16),
        h=ref["chf_h"].astype(np.uint8),
        con=ref["chf_con"].astype(np.uint8),
        neighbor=ref["chf_neighbor"].astype(np.int32),
        area=ref["chf_area"].astype(np.uint8),
        span_x=ref["chf_x"].astype(np.int32),
        span_y=ref["chf_z"].astype(np.int32),
        dist=ref["chf_dist"].astype(np.uint16) if with_regions else None,
        reg=ref["chf_reg"].astype(np.uint16) if with_regions else None,
        max_distance=int(ref["chf_max_distance"]) if with_regions else 0,
        max_regions=int(ref["chf_max_regions"]) if with_regions else 0,
    )


def ref_navmesh_inputs(ref: dict):
    """The reference's rcPolyMesh and rcPolyMeshDetail as VoxNav's PolyMesh / PolyMeshDetail."""
    from core.detail import PolyMeshDetail
    from core.polymesh import PolyMesh

    pmesh = PolyMesh(
        verts=ref["pmesh_verts"].astype(np.uint16),
        polys=ref["pmesh_polys"].astype(np.uint16),
        regs=ref["pmesh_regs"].astype(np.uint16),
        flags=ref["pmesh_flags"].astype(np.uint16),
        areas=ref["pmesh_areas"].astype(np.uint8),
        nvp=int(ref["pmesh_nvp"]),
        bmin=zup(ref["pmesh_bmin"]),
        bmax=zup(ref["pmesh_bmax"]),
        cs=np.float32(ref["cfg_cs"]),
        ch=np.float32(ref["cfg_ch"]),
        border_size=int(ref["pmesh_border_size"]),
        max_edge_error=np.float32(ref["pmesh_max_edge_error"]),
    )
    dmesh = PolyMeshDetail(
        meshes=ref["dmesh_meshes"].astype(np.uint32),
        verts=zup(ref["dmesh_verts"]),
        tris=ref["dmesh_tris"].astype(np.uint8),
    )
    return pmesh, dmesh


def ref_tiled_tiles():
    """The tiled reference's tiles (``dungeon_tiled.npz``: per-tile polygon and detail meshes,
    portal edges) through dtCreateNavMeshData, and RecastDemo's tile-mesh params for them.

    Returns (tiles: list of NavMeshData in build order, params: binio.NavMeshParams).
    """
    from types import SimpleNamespace

    from core.nav.binio import NavMeshParams
    from core.nav.navdata import create_nav_mesh_data

    ref = load_reference("dungeon_tiled")

    def part(name, i):
        start = ref[f"{name}_start"]
        end = start[i + 1] if i + 1 < len(start) else len(ref[name])
        return ref[name][start[i] : end]

    cs, ch = np.float32(ref["cfg_cs"]), np.float32(ref["cfg_ch"])
    tiles = []
    for i in range(len(ref["tile_x"])):
        polys = part("tile_pmesh_polys", i)
        start = ref["tile_pmesh_polys_start"][i]
        pmesh = SimpleNamespace(
            verts=part("tile_pmesh_verts", i), polys=polys, nvp=polys.shape[1] // 2,
            areas=ref["tile_pmesh_areas"][start : start + len(polys)],
            bmin=zup(ref["tile_pmesh_bmin"][i]), bmax=zup(ref["tile_pmesh_bmax"][i]), cs=cs, ch=ch,
        )  # fmt: skip
        dmesh = SimpleNamespace(
            meshes=part("tile_dmesh_meshes", i), verts=zup(part("tile_dmesh_verts", i)),
            tris=part("tile_dmesh_tris", i),
        )  # fmt: skip
        tiles.append(
            create_nav_mesh_data(
                pmesh,
                dmesh,
                walkable_height=float(ref["param_agent_height"]),
                walkable_radius=float(ref["param_agent_radius"]),
                walkable_climb=float(ref["param_agent_max_climb"]),
                tile_x=int(ref["tile_x"][i]),
                tile_y=int(ref["tile_y"][i]),
            )  # fmt: skip
        )
    tile_size = np.float32(int(ref["tiled_tile_size"]) * cs)
    params = NavMeshParams(
        orig=np.asarray(ref["cfg_bmin"], dtype=np.float32),
        tile_width=float(tile_size),
        tile_height=float(tile_size),
        max_tiles=int(ref["tiled_max_tiles"]),
        max_polys=int(ref["tiled_max_polys"]),
    )
    return tiles, params
