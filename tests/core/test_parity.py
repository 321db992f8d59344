"""Bit-identical to Recast: the `python -m core dump` arrays against shared/reference/*.npz."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from core import pipeline
from core.__main__ import dump_arrays, main
from core.config import NavConfig
from core.objio import read_obj

from .refdata import MESHES, load_reference, mesh_path

HEIGHTFIELD_KEYS = ["tri_areas", "mesh_verts", "mesh_tris", "cfg_width", "cfg_height",
    "cfg_bmin", "cfg_bmax", "cfg_walkableHeight", "cfg_walkableClimb", "cfg_walkableRadius",
    "cfg_maxEdgeLen", "cfg_minRegionArea", "cfg_mergeRegionArea", "cfg_detailSampleDist",
    "cfg_detailSampleMaxError"] + [
    f"frag_{k}" for k in ("tri", "x", "z", "smin", "smax", "area")] + [
    f"hf_{stage}_{k}" for stage in ("raster", "lowhang", "ledge", "lowheight")
    for k in ("x", "z", "smin", "smax", "area")]  # fmt: skip


@functools.cache
def dumped(name: str) -> dict:
    verts, tris = read_obj(mesh_path(name), recast_frame=True)
    config = NavConfig()
    return dump_arrays(verts, tris, config, pipeline.bake(verts, tris, config))


@pytest.mark.parametrize("name", MESHES)
@pytest.mark.parametrize("key", HEIGHTFIELD_KEYS)
def test_heightfield_stage_is_bit_identical(name, key):
    ref, ours = load_reference(name), dumped(name)
    assert ours[key].dtype == ref[key].dtype or ours[key].dtype.kind == ref[key].dtype.kind
    assert ours[key].shape == ref[key].shape
    differing = int(np.count_nonzero(ours[key] != ref[key]))
    assert differing == 0, f"{name} {key}: {differing} of {ref[key].size} values differ"


@pytest.mark.parametrize("name", MESHES)
def test_heightfield_counts(name):
    ref, ours = load_reference(name), dumped(name)
    for stage in ("raster", "lowhang", "ledge", "lowheight"):
        for what in ("spans", "walkable"):
            key = f"count_hf_{stage}_{what}"
            assert int(ours[key]) == int(ref[key]), key


def test_dump_command_writes_the_contract(tmp_path, capsys):
    out = tmp_path / "dungeon.npz"
    assert main(["dump", str(mesh_path("dungeon")), "--recast-frame", "--out", str(out)]) == 0
    with np.load(out) as data:
        keys = set(data.files)
        for stage in pipeline.STAGES:
            assert data[f"time_{stage}"].dtype == np.float64
        assert np.array_equal(
            data["hf_lowheight_area"], load_reference("dungeon")["hf_lowheight_area"]
        )
    assert {"tri_areas", "cfg_width", "count_hf_raster_spans"} <= keys
    # Every array of the reference but its metadata and Recast's log counts, to the bit
    # (chf_border_size, chf_walkable_height and chf_walkable_climb were left out).
    ref = load_reference("dungeon")
    with np.load(out) as data:
        for name in ref:
            if not name.startswith(("meta_", "count_recast_")):
                assert name in data.files and np.array_equal(data[name], ref[name]), name


def test_dump_settings_flags_change_the_grid(tmp_path):
    out = tmp_path / "coarse.npz"
    args = ["dump", str(mesh_path("nav_test")), "--recast-frame", "--out", str(out),
            "--cell-size", "0.6", "--heightfield-only", "--filter-ledge-spans", "off"]  # fmt: skip
    assert main(args) == 0
    with np.load(out) as data:
        assert float(data["cfg_cs"]) == np.float32(0.6)
        assert "time_filter_ledge" not in data.files
        assert np.array_equal(data["hf_ledge_area"], data["hf_lowhang_area"])


NAVMESH_KEYS = [
    "chf_x", "chf_z", "chf_y", "chf_h", "chf_con", "chf_neighbor", "chf_cell_index",
    "chf_cell_count", "chf_area_initial", "chf_area", "chf_dist_raw", "chf_dist",
    "chf_max_distance", "chf_max_regions", "chf_reg", "chf_bmin", "chf_bmax",
    "cset_nconts", "cont_nverts", "cont_nrverts", "cont_reg", "cont_area", "cont_verts",
    "cont_rverts", "cont_verts_start", "cont_rverts_start",
    "pmesh_verts", "pmesh_polys", "pmesh_regs", "pmesh_areas", "pmesh_flags", "pmesh_npolys",
    "pmesh_nverts", "pmesh_maxpolys", "pmesh_bmin", "pmesh_bmax",
    "dmesh_meshes", "dmesh_verts", "dmesh_tris",
    "count_chf_spans", "count_chf_walkable_after_erode", "count_regions", "count_contours",
    "count_contour_verts", "count_contour_raw_verts", "count_polys", "count_poly_verts",
    "count_detail_meshes", "count_detail_verts", "count_detail_tris",
]  # fmt: skip


@pytest.mark.parametrize("name", MESHES)
@pytest.mark.parametrize("key", NAVMESH_KEYS)
def test_navmesh_stage_from_obj_is_identical(name, key):
    """End to end from the OBJ: every later stage equals Recast's, not only within tolerance."""
    ref, ours = load_reference(name), dumped(name)
    assert key in ours, f"{key} missing from the dump"
    assert ours[key].shape == ref[key].shape, f"{name} {key}: {ours[key].shape} vs {ref[key].shape}"
    differing = int(np.count_nonzero(ours[key] != ref[key]))
    assert differing == 0, f"{name} {key}: {differing} of {ref[key].size} values differ"
