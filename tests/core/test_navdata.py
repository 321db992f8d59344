"""Detour tile data (core.nav.navdata): dtCreateNavMeshData's arrays from a bake.

Checked against the reference polygon and detail meshes through Detour's invariants (counts,
neighbour encoding, detail layout, a valid BV tree equal to a literal port of Detour's
subdivide), on hand-built polygons (portal edges, no detail mesh) and for the z mirror.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from core.errors import VoxNavError
from core.nav.navdata import (
    EXT_LINK,
    bv_tree,
    create_nav_mesh_data,
    mirror_z,
    poly_area_and_flags,
)

from . import oracle
from .refdata import MESHES, load_reference, ref_navmesh_inputs

F32 = np.float32
AGENT = dict(walkable_height=2.0, walkable_radius=0.6, walkable_climb=0.9)


@pytest.fixture(scope="module", params=MESHES)
def ref_tile(request):
    ref = load_reference(request.param)
    pmesh, dmesh = ref_navmesh_inputs(ref)
    return ref, pmesh, dmesh, create_nav_mesh_data(pmesh, dmesh, **AGENT)


def check_bv_tree(tile):
    """Every polygon a leaf exactly once, subtree sizes consistent, parents contain children."""
    n = tile.npolys
    assert tile.bv_i.shape == (2 * n,) and tile.bv_bmin.shape == (2 * n, 3)
    assert tile.bv_i[-1] == 0 and not tile.bv_bmin[-1].any() and not tile.bv_bmax[-1].any()
    used = 2 * n - 1
    assert tile.bv_i[0] == (-used if n > 1 else 0)
    leaves = tile.bv_i[:used][tile.bv_i[:used] >= 0]
    assert sorted(leaves.tolist()) == list(range(n))
    assert (tile.bv_bmin[:used] <= tile.bv_bmax[:used]).all()

    def visit(node):  # returns the end of the subtree starting at node
        if tile.bv_i[node] >= 0:
            return node + 1
        end = node - int(tile.bv_i[node])
        child = node + 1
        while child < end:
            assert (tile.bv_bmin[child] >= tile.bv_bmin[node]).all()
            assert (tile.bv_bmax[child] <= tile.bv_bmax[node]).all()
            child = visit(child)
        assert child == end
        return end

    assert visit(0) == used


def test_counts_and_header(ref_tile):
    ref, pmesh, dmesh, tile = ref_tile
    nvp = int(ref["pmesh_nvp"])
    ids = ref["pmesh_polys"][:, :nvp]
    counts = (ids != 0xFFFF).sum(axis=1)
    assert tile.npolys == int(ref["pmesh_npolys"]) and tile.nverts == int(ref["pmesh_nverts"])
    np.testing.assert_array_equal(tile.poly_vert_count, counts)
    assert tile.max_link_count == counts.sum()  # solo mesh: no portal edges
    np.testing.assert_array_equal(tile.bmin, ref["pmesh_bmin"])
    np.testing.assert_array_equal(tile.bmax, ref["pmesh_bmax"])
    assert tile.bv_quant_factor == F32(1) / F32(ref["cfg_cs"])
    assert tile.walkable_climb == F32(0.9) and tile.walkable_radius == F32(0.6)
    # Vertices: bmin + cell * (cs, ch, cs) in Recast's Y-up frame.
    cell = ref["pmesh_verts"].astype(np.float64)
    scale = np.array([ref["cfg_cs"], ref["cfg_ch"], ref["cfg_cs"]], dtype=np.float64)
    expect = ref["pmesh_bmin"].astype(np.float64) + cell * scale
    np.testing.assert_allclose(tile.verts, expect, rtol=0, atol=1e-4)
    assert tile.verts.dtype == np.float32


def test_polygons_and_neighbours(ref_tile):
    ref, _pmesh, _dmesh, tile = ref_tile
    nvp = int(ref["pmesh_nvp"])
    ids = ref["pmesh_polys"][:, :nvp].astype(np.int64)
    neis = ref["pmesh_polys"][:, nvp:].astype(np.int64)
    used = ids != 0xFFFF
    np.testing.assert_array_equal(tile.poly_verts[:, :nvp][used], ids[used])
    assert not tile.poly_verts[:, :nvp][~used].any()
    expect = np.where(neis == 0xFFFF, 0, neis + 1)
    np.testing.assert_array_equal(tile.poly_neis[:, :nvp][used], expect[used])
    assert not (tile.poly_neis & EXT_LINK).any()
    assert (tile.poly_area == 0).all() and (tile.poly_flags == 1).all()
    assert (tile.poly_type == 0).all()


def test_detail_layout(ref_tile):
    ref, _pmesh, _dmesh, tile = ref_tile
    meshes = ref["dmesh_meshes"].astype(np.int64)
    nv = tile.poly_vert_count.astype(np.int64)
    extra = meshes[:, 1] - nv
    np.testing.assert_array_equal(tile.detail_meshes[:, 2], extra)
    np.testing.assert_array_equal(tile.detail_meshes[:, 0], np.cumsum(extra) - extra)
    np.testing.assert_array_equal(tile.detail_meshes[:, 1], meshes[:, 2])
    np.testing.assert_array_equal(tile.detail_meshes[:, 3], meshes[:, 3])
    assert tile.detail_verts.shape == (extra.sum(), 3)
    np.testing.assert_array_equal(tile.detail_tris, ref["dmesh_tris"])
    # Each sub-mesh rebuilt from polygon vertices + detail-only vertices is Recast's.
    dverts = ref["dmesh_verts"]
    for i in range(tile.npolys):
        vb, ndv = meshes[i, 0], meshes[i, 1]
        own = tile.verts[tile.poly_verts[i, : nv[i]]]
        np.testing.assert_array_equal(own[:, [0, 2]], dverts[vb : vb + nv[i]][:, [0, 2]])
        base, k = tile.detail_meshes[i, 0], tile.detail_meshes[i, 2]
        np.testing.assert_array_equal(
            tile.detail_verts[base : base + k], dverts[vb + nv[i] : vb + ndv]
        )


def test_bv_tree_valid_and_equal_to_literal_port(ref_tile):
    _ref, _pmesh, _dmesh, tile = ref_tile
    check_bv_tree(tile)
    used = 2 * tile.npolys - 1
    leaf = tile.bv_i[:used] >= 0
    items_min = np.zeros((tile.npolys, 3), np.uint16)
    items_max = np.zeros((tile.npolys, 3), np.uint16)
    items_min[tile.bv_i[:used][leaf]] = tile.bv_bmin[:used][leaf]
    items_max[tile.bv_i[:used][leaf]] = tile.bv_bmax[:used][leaf]
    lo, hi, idx = oracle.detour_bv_tree(items_min, items_max)
    np.testing.assert_array_equal(tile.bv_bmin[:used], lo)
    np.testing.assert_array_equal(tile.bv_bmax[:used], hi)
    np.testing.assert_array_equal(tile.bv_i[:used], idx)
    # Leaf boxes hold their polygon's vertices (x and z quantized by 1/cs, truncated).
    q = F32(tile.bv_quant_factor)
    for node in np.nonzero(leaf)[0]:
        p = tile.bv_i[node]
        v = tile.verts[tile.poly_verts[p, : tile.poly_vert_count[p]]]
        cells = np.trunc((v - tile.bmin) * q).astype(np.int64)
        assert (cells[:, [0, 2]] >= tile.bv_bmin[node, [0, 2]]).all()
        assert (cells[:, [0, 2]] <= tile.bv_bmax[node, [0, 2]]).all()


@pytest.mark.parametrize("seed", range(4))
def test_bv_tree_random_items_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    lo = rng.integers(0, 8, size=(n, 3)).astype(np.uint16)  # many equal keys: sort stability
    hi = (lo + rng.integers(0, 5, size=(n, 3))).astype(np.uint16)
    node_min, node_max, node_i = bv_tree(lo, hi)
    ref_min, ref_max, ref_i = oracle.detour_bv_tree(lo, hi)
    np.testing.assert_array_equal(node_min[: 2 * n - 1], ref_min)
    np.testing.assert_array_equal(node_max[: 2 * n - 1], ref_max)
    np.testing.assert_array_equal(node_i[: 2 * n - 1], ref_i)


def tiny_mesh(neighbour_codes, areas=(63,)):
    """One 2x2-cell quad (or more with areas) with given per-edge neighbour codes."""
    nvp = 6
    polys = np.full((1, 2 * nvp), 0xFFFF, dtype=np.uint16)
    polys[0, :4] = [0, 1, 2, 3]
    polys[0, nvp : nvp + 4] = neighbour_codes
    return SimpleNamespace(
        verts=np.array([[0, 0, 0], [0, 0, 2], [2, 0, 2], [2, 0, 0]], dtype=np.uint16),
        polys=polys,
        areas=np.array(areas, dtype=np.uint8),
        nvp=nvp,
        bmin=np.array([1.0, 2.0, 3.0], dtype=F32),
        bmax=np.array([1.6, 2.6, 3.5], dtype=F32),
        cs=F32(0.3),
        ch=F32(0.2),
    )


def test_portal_edges_and_fan_detail():
    # Recast border codes: 0x8000 | dir with dir 0 x-, 1 z+, 2 x+, 3 z-; 0x800f = no portal.
    mesh = tiny_mesh([0x8000, 0x8001, 0x8002, 0x800F])
    tile = create_nav_mesh_data(mesh, None, **AGENT, tile_x=3, tile_y=4)
    assert tile.poly_neis[0, :4].tolist() == [EXT_LINK | 4, EXT_LINK | 2, EXT_LINK | 0, 0]
    assert tile.max_link_count == 4 + 2 * 3
    assert (tile.tile_x, tile.tile_y) == (3, 4)
    # Detour's dummy detail: a fan (0, j-1, j) with boundary flags on the outline edges.
    assert tile.detail_meshes.tolist() == [[0, 0, 0, 2]]
    assert tile.detail_tris.tolist() == [[0, 1, 2, 1 | 4], [0, 2, 3, 4 | 16]]
    # Recast (x, y, z) frame: the Z-up bounds (x, y, z) are stored as (x, z, y).
    np.testing.assert_array_equal(tile.bmin, [1.0, 3.0, 2.0])
    # Without detail the BV box is the cell box; heights in cs units (floor / ceil).
    check_bv_tree(tile)
    assert tile.bv_bmin[0].tolist() == [0, 0, 0] and tile.bv_bmax[0].tolist() == [2, 0, 2]


def test_area_and_flag_rule():
    area, flags = poly_area_and_flags(np.array([63, 0, 5, 62, 1], dtype=np.uint8))
    assert area.tolist() == [0, 0, 5, 62, 1]
    assert flags.tolist() == [1, 0, 1, 1, 1]
    assert area.dtype == np.uint8 and flags.dtype == np.uint16


def signed_areas_xz(tile):
    """2D signed area (x, z) of every polygon, in Detour's (x, z) plane."""
    out = []
    for i in range(tile.npolys):
        v = tile.verts[tile.poly_verts[i, : tile.poly_vert_count[i]]].astype(np.float64)
        x, z = v[:, 0], v[:, 2]
        out.append(0.5 * np.sum(x * np.roll(z, -1) - np.roll(x, -1) * z))
    return np.array(out)


def test_mirror_keeps_detour_winding_and_inverts_exactly(ref_tile):
    _ref, _pmesh, _dmesh, tile = ref_tile
    mirrored = mirror_z(tile)
    assert (np.sign(signed_areas_xz(mirrored)) == np.sign(signed_areas_xz(tile))).all()
    np.testing.assert_array_equal(mirrored.verts[:, 2], -tile.verts[:, 2])
    np.testing.assert_array_equal(mirrored.bmin, [tile.bmin[0], tile.bmin[1], -tile.bmax[2]])
    check_bv_tree(mirrored)
    # The edge across to neighbour j still joins the same two vertices.
    for i in range(tile.npolys):
        n = tile.poly_vert_count[i]
        edges = {
            int(tile.poly_neis[i, k]): {
                int(tile.poly_verts[i, k]),
                int(tile.poly_verts[i, (k + 1) % n]),
            }
            for k in range(n)
            if tile.poly_neis[i, k]
        }
        medges = {
            int(mirrored.poly_neis[i, k]): {
                int(mirrored.poly_verts[i, k]),
                int(mirrored.poly_verts[i, (k + 1) % n]),
            }
            for k in range(n)
            if mirrored.poly_neis[i, k]
        }
        assert edges == medges
    back = mirror_z(mirrored)
    for name in ("verts", "poly_verts", "poly_neis", "detail_verts", "detail_tris", "bv_i"):
        np.testing.assert_array_equal(getattr(back, name), getattr(tile, name), err_msg=name)
    np.testing.assert_array_equal(back.bv_bmin, tile.bv_bmin)


def test_mirror_portal_sides():
    mesh = tiny_mesh([0x8000, 0x8001, 0x8002, 0x8003])
    tile = mirror_z(create_nav_mesh_data(mesh, None, **AGENT))
    # Edges reverse (edge k <- edge n-2-k) and z+ (2) <-> z- (6); x sides stay.
    assert tile.poly_neis[0, :4].tolist() == [
        EXT_LINK | 0,
        EXT_LINK | 6,
        EXT_LINK | 4,
        EXT_LINK | 2,
    ]


def test_bad_meshes():
    mesh = tiny_mesh([0xFFFF] * 4)
    mesh.nvp = 7
    mesh.polys = np.full((1, 14), 0xFFFF, dtype=np.uint16)
    with pytest.raises(VoxNavError, match="at most 6"):
        create_nav_mesh_data(mesh, None, **AGENT)
    empty = tiny_mesh([0xFFFF] * 4)
    empty.polys = np.zeros((0, 12), dtype=np.uint16)
    empty.areas = np.zeros(0, dtype=np.uint8)
    with pytest.raises(VoxNavError, match="empty"):
        create_nav_mesh_data(empty, None, **AGENT)
