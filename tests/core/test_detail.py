"""Detail mesh (core.detail): parity with Recast's rcBuildPolyMeshDetail, invariants, oracles."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import numpy as np
import pytest

from core import detail, threads
from core.compact import DIR_OFFSET_X, DIR_OFFSET_Y, CompactHeightfield
from core.detail import (
    UNSET_HEIGHT,
    PolyMeshDetail,
    _height_patches,
    _LocalHeights,
    _Patches,
    build_poly_mesh_detail,
    build_poly_mesh_details,
    patch_chunks,
)
from core.errors import VoxNavError

from .refdata import MESHES, load_reference, mesh_path, ref_compact, zup

F32 = np.float32


def ref_polymesh(ref) -> SimpleNamespace:
    """Recast's polygon mesh from the reference, with core.polymesh.PolyMesh's field names."""
    return SimpleNamespace(
        verts=ref["pmesh_verts"].astype(np.uint16),
        polys=ref["pmesh_polys"].astype(np.uint16),
        regs=ref["pmesh_regs"].astype(np.uint16),
        flags=ref["pmesh_flags"].astype(np.uint16),
        areas=ref["pmesh_areas"].astype(np.uint8),
        nvp=int(ref["pmesh_nvp"]),
        bmin=zup(ref["pmesh_bmin"]),
        bmax=zup(ref["pmesh_bmax"]),
        cs=F32(ref["cfg_cs"]),
        ch=F32(ref["cfg_ch"]),
        border_size=int(ref["pmesh_border_size"]),
        max_edge_error=F32(ref["pmesh_max_edge_error"]),
    )


def build_ref(name, sample_dist=None, sample_max_error=None):
    ref = load_reference(name)
    sd = ref["cfg_detailSampleDist"] if sample_dist is None else sample_dist
    se = ref["cfg_detailSampleMaxError"] if sample_max_error is None else sample_max_error
    pmesh = ref_polymesh(ref)
    chf = ref_compact(ref)
    return ref, pmesh, chf, build_poly_mesh_detail(pmesh, chf, sd, se)


@pytest.fixture(scope="module", params=MESHES)
def built(request):
    return build_ref(request.param)


# ----------------------------------------------------------------------------------------------
# Parity


def test_parity_with_recast(built):
    ref, _pmesh, _chf, dmesh = built
    assert dmesh.nmeshes == int(ref["dmesh_nmeshes"])
    assert dmesh.nverts == int(ref["dmesh_nverts"])
    assert dmesh.ntris == int(ref["dmesh_ntris"])
    assert dmesh.meshes.dtype == np.uint32 and dmesh.verts.dtype == np.float32
    assert dmesh.tris.dtype == np.uint8
    np.testing.assert_array_equal(dmesh.meshes, ref["dmesh_meshes"])
    np.testing.assert_array_equal(dmesh.tris, ref["dmesh_tris"])
    # Bit-exact float32 world vertices (Recast's Y-up mapped to Z-up).
    np.testing.assert_array_equal(dmesh.verts, zup(ref["dmesh_verts"]))


def test_headline_counts():
    assert build_ref("dungeon")[3].ntris == 291
    assert build_ref("dungeon")[3].nverts == 513
    assert build_ref("nav_test")[3].ntris == 561


def test_reference_arrays_round_trip(built):
    ref, _pmesh, _chf, dmesh = built
    arrays = dmesh.to_reference_arrays()
    for key in ("dmesh_meshes", "dmesh_verts", "dmesh_tris", "dmesh_ntris", "dmesh_nverts"):
        np.testing.assert_array_equal(arrays[key], ref[key])
        assert arrays[key].dtype == ref[key].dtype


# ----------------------------------------------------------------------------------------------
# Invariants


def _submeshes(dmesh):
    for vb, vc, tb, tc in dmesh.meshes.astype(np.int64).tolist():
        yield dmesh.verts[vb : vb + vc], dmesh.tris[tb : tb + tc].astype(np.int64)


def _poly_world_xy(pmesh, p):
    ids = pmesh.polys[p, : pmesh.nvp]
    ids = ids[ids != 0xFFFF].astype(np.int64)
    v = pmesh.verts[ids].astype(np.float64)
    return pmesh.bmin[0] + v[:, 0] * pmesh.cs, pmesh.bmin[1] + v[:, 2] * pmesh.cs


def _check_coverage(pmesh, dmesh):
    for p, (dv, dt) in enumerate(_submeshes(dmesh)):
        x, y = _poly_world_xy(pmesh, p)
        poly_area = abs(0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))
        a, b, c = (dv[dt[:, k]].astype(np.float64) for k in range(3))
        cross = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (
            c[:, 0] - a[:, 0]
        )
        # One winding for all triangles of a polygon, and together they cover it.
        assert (cross <= 1e-9).all() or (cross >= -1e-9).all(), f"polygon {p} mixed winding"
        tri_area = 0.5 * np.abs(cross).sum()
        assert tri_area == pytest.approx(poly_area, rel=1e-3), f"polygon {p}"


def test_triangles_cover_each_polygon(built):
    _ref, pmesh, _chf, dmesh = built
    _check_coverage(pmesh, dmesh)


def test_first_detail_vertices_are_the_polygon(built):
    _ref, pmesh, _chf, dmesh = built
    for p, (dv, _dt) in enumerate(_submeshes(dmesh)):
        x, y = _poly_world_xy(pmesh, p)
        np.testing.assert_allclose(dv[: x.size, 0], x, atol=1e-4)
        np.testing.assert_allclose(dv[: x.size, 1], y, atol=1e-4)


def test_vertices_lie_on_the_walkable_surface(built):
    """Every detail vertex is within sample_max_error + ch of a span floor near its cell."""
    ref, _pmesh, chf, dmesh = built
    tol = float(ref["cfg_detailSampleMaxError"]) + float(chf.ch) + 1e-4
    ix = np.floor((dmesh.verts[:, 0] - chf.bmin[0]) / chf.cs).astype(np.int64)
    iy = np.floor((dmesh.verts[:, 1] - chf.bmin[1]) / chf.cs).astype(np.int64)
    # Floor surface of every span as Recast's detail mesh places it (one ch above the floor).
    floor_z = chf.bmin[2] + (chf.y.astype(np.float64) + 1) * chf.ch
    best = np.full(dmesh.nverts, np.inf)
    for dx in range(-2, 3):
        for dy in range(-2, 3):
            x = np.clip(ix + dx, 0, chf.width - 1)
            y = np.clip(iy + dy, 0, chf.height - 1)
            col = x + y * chf.width
            lo, hi = chf.cell_start[col], chf.cell_start[col + 1]
            for k in range(int((hi - lo).max())):
                ok = lo + k < hi
                s = np.where(ok, lo + k, 0)
                d = np.where(ok, np.abs(dmesh.verts[:, 2] - floor_z[s]), np.inf)
                best = np.minimum(best, d)
    assert (best <= tol).all(), f"{(best > tol).sum()} vertices off the surface, worst {best.max()}"


def test_edge_flags_mark_polygon_outline(built):
    _ref, _pmesh, _chf, dmesh = built
    flags = dmesh.tris[:, 3]
    assert not (flags & ~np.uint8(0x15)).any()
    # Every polygon outline segment is flagged exactly once.
    for dv, dt in _submeshes(dmesh):
        n = int(
            ((dt[:, 3] & 1) > 0).sum() + ((dt[:, 3] & 4) > 0).sum() + ((dt[:, 3] & 16) > 0).sum()
        )
        # A triangulated polygon (no interior points) has nv - 2 triangles and nv outline edges.
        if dt.shape[0] == dv.shape[0] - 2:
            assert n == dv.shape[0]


def test_no_samples_triangulates_polygons_only():
    ref, pmesh, _chf, dmesh = build_ref("dungeon", sample_dist=0.0)
    counts = (pmesh.polys[:, : pmesh.nvp] != 0xFFFF).sum(axis=1)
    np.testing.assert_array_equal(dmesh.meshes[:, 1], counts)
    np.testing.assert_array_equal(dmesh.meshes[:, 3], counts - 2)
    _check_coverage(pmesh, dmesh)


def test_zero_error_adds_more_samples():
    _ref, pmesh, _chf, loose = build_ref("nav_test")
    _ref, _pmesh, _chf, tight = build_ref("nav_test", sample_max_error=0.0)
    assert tight.nverts >= loose.nverts
    _check_coverage(pmesh, tight)


# ----------------------------------------------------------------------------------------------
# Hand-built cases


def flat_chf(width=12, height=10, floor=5, reg=1, hole=None) -> CompactHeightfield:
    """A flat one-layer compact heightfield, every span connected to its 4 neighbours."""
    mask = np.ones((height, width), dtype=bool)
    if hole is not None:
        mask[hole] = False
    ys, xs = np.nonzero(mask)
    n = xs.size
    index = -np.ones((height, width), dtype=np.int64)
    index[ys, xs] = np.arange(n)
    counts = mask.ravel().astype(np.int64)
    cell_start = np.zeros(width * height + 1, dtype=np.int64)
    np.cumsum(counts, out=cell_start[1:])
    neighbor = -np.ones((n, 4), dtype=np.int32)
    con = np.full((n, 4), 63, dtype=np.uint8)
    for d in range(4):
        nx, ny = xs + DIR_OFFSET_X[d], ys + DIR_OFFSET_Y[d]
        ok = (nx >= 0) & (ny >= 0) & (nx < width) & (ny < height)
        nb = np.full(n, -1)
        nb[ok] = index[ny[ok], nx[ok]]
        neighbor[:, d] = nb
        con[nb >= 0, d] = 0
    return CompactHeightfield(
        width=width,
        height=height,
        border_size=0,
        walkable_height=10,
        walkable_climb=4,
        bmin=np.array([10.0, 20.0, 1.0], dtype=F32),
        bmax=np.array([10 + width * 0.5, 20 + height * 0.5, 10.0], dtype=F32),
        cs=F32(0.5),
        ch=F32(0.25),
        cell_start=cell_start,
        y=np.full(n, floor, dtype=np.uint16),
        h=np.full(n, 20, dtype=np.uint8),
        con=con,
        neighbor=neighbor,
        area=np.full(n, 63, dtype=np.uint8),
        span_x=xs.astype(np.int32),
        span_y=ys.astype(np.int32),
        dist=np.zeros(n, dtype=np.uint16),
        reg=np.full(n, reg, dtype=np.uint16),
        max_distance=0,
        max_regions=reg + 1,
    )


def square_pmesh(chf, corners=((1, 1), (1, 9), (11, 9), (11, 1)), floor=5, reg=1):
    nvp = 6
    verts = np.array([[x, floor, y] for x, y in corners], dtype=np.uint16)
    polys = np.full((1, 2 * nvp), 0xFFFF, dtype=np.uint16)
    polys[0, : len(corners)] = np.arange(len(corners))
    return SimpleNamespace(
        verts=verts,
        polys=polys,
        regs=np.array([reg], dtype=np.uint16),
        flags=np.zeros(1, dtype=np.uint16),
        areas=np.full(1, 63, dtype=np.uint8),
        nvp=nvp,
        bmin=chf.bmin.copy(),
        bmax=chf.bmax.copy(),
        cs=chf.cs,
        ch=chf.ch,
        border_size=0,
        max_edge_error=F32(1.3),
    )


@pytest.mark.parametrize("reg", [1, 0])
def test_flat_square(reg):
    """A flat square: edge samples are dropped (no height error), two triangles remain."""
    chf = flat_chf(reg=1)
    pmesh = square_pmesh(chf, reg=reg)  # reg 0: seeded from the polygon centre instead
    dmesh = build_poly_mesh_detail(pmesh, chf, 1.5, 0.25)
    assert dmesh.nverts == 4 and dmesh.ntris == 2
    np.testing.assert_array_equal(dmesh.meshes, [[0, 4, 0, 2]])
    expected_z = F32(chf.bmin[2]) + F32(5) * chf.ch + chf.ch
    assert np.all(dmesh.verts[:, 2] == expected_z)
    np.testing.assert_allclose(
        dmesh.verts[:, :2], [[10.5, 20.5], [10.5, 24.5], [15.5, 24.5], [15.5, 20.5]]
    )
    _check_coverage(pmesh, dmesh)
    # Every outline edge is flagged once.
    flags = dmesh.tris[:, 3]
    assert sum(bin(int(f)).count("1") for f in flags) == 4


def test_bump_inside_adds_interior_vertex():
    chf = flat_chf()
    # Raise a block of cells in the middle well above the error.
    bump = (chf.span_x >= 5) & (chf.span_x <= 7) & (chf.span_y >= 4) & (chf.span_y <= 6)
    chf.y = np.where(bump, 9, chf.y).astype(np.uint16)
    pmesh = square_pmesh(chf)
    dmesh = build_poly_mesh_detail(pmesh, chf, 1.0, 0.25)
    assert dmesh.nverts > 4
    top = F32(chf.bmin[2]) + F32(9) * chf.ch + chf.ch
    assert np.any(dmesh.verts[:, 2] == top)
    _check_coverage(pmesh, dmesh)


def test_empty_mesh_gives_empty_detail():
    chf = flat_chf()
    pmesh = square_pmesh(chf)
    pmesh.polys = pmesh.polys[:0]
    pmesh.regs = pmesh.regs[:0]
    dmesh = build_poly_mesh_detail(pmesh, chf, 1.0, 0.25)
    assert isinstance(dmesh, PolyMeshDetail)
    assert dmesh.meshes.shape == (0, 4) and dmesh.nverts == 0 and dmesh.ntris == 0


@pytest.mark.parametrize("scene", MESHES)
def test_details_together_equal_each_alone(scene):
    """Several agents' polygon meshes on one compact heightfield layout (the agents' regions
    differ): built together, each detail mesh equals that mesh's built alone; a mesh without
    polygons among them gets its empty detail mesh."""
    from core import pipeline
    from core.config import NavConfig
    from core.objio import read_obj

    verts, tris = read_obj(mesh_path(scene))
    bakes = [pipeline.bake(verts, tris, NavConfig(agent_radius=r)) for r in (0.3, 0.6, 1.2)]
    derived = bakes[0].config.derived()
    settings = (float(derived.detail_sample_dist), float(derived.detail_sample_max_error))
    pmeshes = [b.polymesh for b in bakes]
    chfs = [b.compact for b in bakes]
    empty = SimpleNamespace(**vars(pmeshes[0]))
    empty.polys, empty.regs = empty.polys[:0], empty.regs[:0]
    pmeshes.insert(1, empty)
    chfs.insert(1, chfs[0])
    together = build_poly_mesh_details(pmeshes, chfs, *settings)
    assert len(together) == 4
    assert together[1].meshes.shape == (0, 4) and together[1].nverts == 0
    del together[1], pmeshes[1], chfs[1]
    for bake, got in zip(bakes, together, strict=True):
        assert not np.array_equal(bake.compact.reg, chfs[0].reg) or bake is bakes[0]
        for name in ("meshes", "verts", "tris"):
            np.testing.assert_array_equal(getattr(got, name), getattr(bake.detail, name))
    # Meshes of another frame, or heightfields of another layout, are refused.
    moved = SimpleNamespace(**vars(pmeshes[1]))
    moved.border_size = 3
    with pytest.raises(VoxNavError, match="same bmin"):
        build_poly_mesh_details([pmeshes[0], moved], chfs[:2], *settings)
    other = pipeline.bake(verts, tris, NavConfig(agent_height=1.0)).compact
    with pytest.raises(VoxNavError, match="share their layout"):
        build_poly_mesh_details(pmeshes[:2], [chfs[0], other], *settings)


def test_bad_input():
    chf = flat_chf()
    pmesh = square_pmesh(chf)
    with pytest.raises(VoxNavError, match="polys"):
        build_poly_mesh_detail(
            SimpleNamespace(**{**vars(pmesh), "polys": pmesh.polys[:, :5]}), chf, 1, 1
        )
    with pytest.raises(VoxNavError, match="verts"):
        build_poly_mesh_detail(
            SimpleNamespace(**{**vars(pmesh), "verts": pmesh.verts[:, :2]}), chf, 1, 1
        )
    with pytest.raises(VoxNavError, match="sample_dist"):
        build_poly_mesh_detail(pmesh, chf, -1.0, 1)
    with pytest.raises(VoxNavError, match="sample_max_error"):
        build_poly_mesh_detail(pmesh, chf, 1.0, float("nan"))
    chf.reg = None
    with pytest.raises(VoxNavError, match="regions"):
        build_poly_mesh_detail(pmesh, chf, 1, 1)


# ----------------------------------------------------------------------------------------------
# Slow, obviously-correct oracles for the vectorized parts


def slow_height_data(chf, poly_verts, region, xmin, ymin, w, h):
    """Recast's getHeightData, one cell at a time with a FIFO queue (polygon of one region)."""
    data = np.full((h, w), UNSET_HEIGHT, dtype=np.int64)
    queue = deque()
    for hy in range(h):
        for hx in range(w):
            x, y = xmin + hx, ymin + hy
            col = x + y * chf.width
            for i in range(chf.cell_start[col], chf.cell_start[col + 1]):
                if chf.reg[i] == region:
                    data[hy, hx] = chf.y[i]
                    nbs = [int(chf.neighbor[i, d]) for d in range(4)]
                    if any(nb >= 0 and chf.reg[nb] != region for nb in nbs):
                        queue.append((x, y, i))
                    break
    assert queue or (data != UNSET_HEIGHT).any()
    while queue:
        cx, cy, ci = queue.popleft()
        for d in range(4):
            ni = int(chf.neighbor[ci, d])
            if ni < 0:
                continue
            ax, ay = cx + int(DIR_OFFSET_X[d]), cy + int(DIR_OFFSET_Y[d])
            hx, hy = ax - xmin, ay - ymin
            if not (0 <= hx < w and 0 <= hy < h) or data[hy, hx] != UNSET_HEIGHT:
                continue
            data[hy, hx] = chf.y[ni]
            queue.append((ax, ay, ni))
    return data


def patch_frames(pmesh, chf):
    """Per polygon of ``pmesh``: vertices, (npoly, nvp) ids, sizes and patch boxes, as
    build_poly_mesh_detail frames them (cells)."""
    nvp = pmesh.nvp
    pidx = pmesh.polys[:, :nvp].astype(np.int64)
    npoly = (pidx != 0xFFFF).sum(axis=1)
    vi = pmesh.verts.astype(np.int64)
    safe = np.where(pidx != 0xFFFF, pidx, pidx[:, :1])
    xmin = np.maximum(0, vi[safe, 0].min(axis=1) - 1)
    xmax = np.minimum(chf.width, vi[safe, 0].max(axis=1) + 1)
    ymin = np.maximum(0, vi[safe, 2].min(axis=1) - 1)
    ymax = np.minimum(chf.height, vi[safe, 2].max(axis=1) + 1)
    return vi, safe, pidx, npoly, xmin, ymin, xmax - xmin, ymax - ymin


@pytest.mark.parametrize("scene", ["nav_test", "dungeon"])
def test_batched_height_patches_match_sequential_flood(scene):
    ref = load_reference(scene)
    pmesh, chf = ref_polymesh(ref), ref_compact(ref)
    vi, _safe, pidx, npoly, xmin, ymin, pw, ph = patch_frames(pmesh, chf)
    regs = pmesh.regs.astype(np.int64)
    data, off = _height_patches(chf, vi, pidx, npoly, regs, xmin, ymin, pw, ph, 0)
    for p in range(0, pmesh.polys.shape[0], 3):
        slow = slow_height_data(chf, None, regs[p], xmin[p], ymin[p], pw[p], ph[p])
        fast = data[off[p] : off[p + 1]].reshape(ph[p], pw[p])
        np.testing.assert_array_equal(fast, slow, err_msg=f"polygon {p}")


def slow_get_height(fx, fy, fz, ics, ch, radius, data, xmin, ymin):
    """Recast's getHeight, scalar, with its spiral walk."""
    h, w = data.shape
    ix = int(np.floor(F32(fx) * ics + F32(0.01)))
    iz = int(np.floor(F32(fz) * ics + F32(0.01)))
    ix = min(max(ix - xmin, 0), w - 1)
    iz = min(max(iz - ymin, 0), h - 1)
    hgt = int(data[iz, ix])
    if hgt != UNSET_HEIGHT:
        return hgt
    x, z, dx, dz = 1, 0, 1, 0
    max_iter = (radius * 2 + 1) ** 2 - 1
    next_start, next_iters = 8, 16
    dmin = np.inf
    for i in range(max_iter):
        nx, nz = ix + x, iz + z
        if 0 <= nx < w and 0 <= nz < h:
            nh = int(data[nz, nx])
            if nh != UNSET_HEIGHT:
                d = abs(F32(nh) * ch - F32(fy))
                if d < dmin:
                    hgt, dmin = nh, d
        if i + 1 == next_start:
            if hgt != UNSET_HEIGHT:
                break
            next_start += next_iters
            next_iters += 8
        if x == z or (x < 0 and x == -z) or (x > 0 and x == 1 - z):
            dx, dz = -dz, dx
        x += dx
        z += dz
    return hgt


@pytest.mark.parametrize("radius", [1, 2, 3])
def test_get_height_matches_scalar_spiral(radius):
    rng = np.random.default_rng(radius)
    h, w = 9, 11
    data = rng.integers(0, 40, size=(h, w)).astype(np.uint16)
    data[rng.random((h, w)) < 0.6] = UNSET_HEIGHT
    xmin, ymin = 3, 4
    cs, ch = F32(0.3), F32(0.2)
    ics = F32(1) / cs
    patches = _Patches(data.ravel(), [0, w * h], [xmin], [ymin], [w], [h], ics, ch, radius)
    n = 400
    fx = ((xmin + rng.random(n) * (w + 2) - 1) * cs).astype(F32)
    fz = ((ymin + rng.random(n) * (h + 2) - 1) * cs).astype(F32)
    fy = (rng.random(n) * 8).astype(F32)
    fast = patches.height(np.zeros(n, dtype=np.int64), fx, fy, fz)
    slow = [
        slow_get_height(a, b, c, ics, ch, radius, data, xmin, ymin)
        for a, b, c in zip(fx, fy, fz, strict=True)
    ]
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("scene", ["nav_test", "dungeon"])
@pytest.mark.parametrize("levels", [0, 1, 2, 3])
def test_local_heights_equal_getheight_on_whole_patches(scene, levels, monkeypatch):
    """`_LocalHeights` (Recast's flood replayed around each looked-up cell) gives getHeight on
    the literal flood's whole patches: at the polygons' vertices, edge midpoints and centres
    (nearly all reached within two levels: few whole patches built) and at random points over and
    beyond each patch box (far cells, unreached ones: those polygons' whole patches are built,
    more of them with fewer levels). Also with the regions read from a joined field of two
    meshes' regions (``layer``), as `build_poly_mesh_details` reads several agents'."""
    monkeypatch.setattr(detail, "LOCAL_FLOOD_LEVELS", levels)
    ref = load_reference(scene)
    pmesh, chf = ref_polymesh(ref), ref_compact(ref)
    vi, safe, pidx, npoly, xmin, ymin, pw, ph = patch_frames(pmesh, chf)
    regs = pmesh.regs.astype(np.int64)
    cs, ch = F32(chf.cs), F32(chf.ch)
    ics = F32(1) / cs
    radius = 2
    polys = np.arange(0, regs.shape[0], 2)
    slow = [slow_height_data(chf, None, regs[p], xmin[p], ymin[p], pw[p], ph[p]) for p in polys]
    sizes = pw[polys] * ph[polys]
    off = np.concatenate([[0], np.cumsum(sizes)])
    whole = _Patches(
        np.concatenate([d.ravel() for d in slow]).astype(np.uint16), off, xmin[polys],
        ymin[polys], pw[polys], ph[polys], ics, ch, radius,
    )  # fmt: skip
    rng = np.random.default_rng(levels)
    # Near points: vertices, edge midpoints, centres (local frame, world units).
    near_pid, near_x, near_z = [], [], []
    for k, p in enumerate(polys.tolist()):
        vx = vi[safe[p, : npoly[p]], 0].astype(F32) * cs
        vz = vi[safe[p, : npoly[p]], 2].astype(F32) * cs
        mx, mz = (vx + np.roll(vx, 1)) * F32(0.5), (vz + np.roll(vz, 1)) * F32(0.5)
        xs = np.concatenate([vx, mx, [vx.mean(dtype=F32)]])
        zs = np.concatenate([vz, mz, [vz.mean(dtype=F32)]])
        near_pid += [k] * xs.size
        near_x.append(xs)
        near_z.append(zs)
    near = (
        np.array(near_pid),
        np.concatenate(near_x).astype(F32),
        np.concatenate(near_z).astype(F32),
    )
    # Far points: anywhere over the patch box and a cell beyond it.
    far_pid = rng.integers(0, polys.size, 3000)
    far = (
        far_pid,
        (
            (xmin[polys][far_pid] - 1 + rng.random(far_pid.size) * (pw[polys][far_pid] + 2)) * cs
        ).astype(F32),
        (
            (ymin[polys][far_pid] - 1 + rng.random(far_pid.size) * (ph[polys][far_pid] + 2)) * cs
        ).astype(F32),
    )
    for joined in (False, True):
        if joined:  # this mesh's regions second in a field after another mesh's
            other = np.where(chf.reg != 0, chf.reg.astype(np.int64) + 7, 0)
            reg_field = np.concatenate([other, chf.reg.astype(np.int64)])
            layer = np.full(polys.size, chf.reg.shape[0], dtype=np.int64)
        else:
            reg_field, layer = None, None
        for name, (pid, fx, fz) in (("near", near), ("far", far)):
            local = _LocalHeights(
                chf, vi, pidx[polys], npoly[polys], regs[polys], xmin[polys], ymin[polys],
                pw[polys], ph[polys], 0, ics, radius, reg_field, layer,
            )  # fmt: skip
            fy = (rng.random(pid.size) * 6).astype(F32)
            got = local.height(pid, fx, fy, fz)
            np.testing.assert_array_equal(got, whole.height(pid, fx, fy, fz), err_msg=name)
            built = int((local.whole_at >= 0).sum())
            if name == "near" and levels >= 2:
                assert built <= polys.size // 20  # the local flood answered nearly all
            if name == "far" and levels <= 1:
                assert built > 0  # some points needed whole patches


@pytest.mark.parametrize("seed", range(12))
def test_local_heights_on_random_layered_fields(seed, monkeypatch):
    """Random fields of up to four spans a column with random regions, where which claim
    comes first in Recast's queue (claimer, then direction) decides many cells' heights:
    every cell of random patch boxes, with 1 to 3 flood levels replayed (the rest from
    whole patches), equals getHeight on the literal flood's patch."""
    from core.compact import build_compact_heightfield

    from .test_compact import random_heightfield

    rng = np.random.default_rng(seed)
    hf = random_heightfield(rng, 14, 14, max_spans=4, areas=(63,))
    chf = build_compact_heightfield(hf, 2, 6)
    chf.reg = rng.integers(1, 4, size=chf.span_count).astype(np.uint16)
    cs, ch = F32(chf.cs), F32(chf.ch)
    ics = F32(1) / cs
    boxes = []
    while len(boxes) < 40:
        x0, y0 = (int(v) for v in rng.integers(0, 10, 2))
        w, h = (int(v) for v in rng.integers(2, 15 - max(x0, y0), 2))
        region = int(rng.integers(1, 4))
        cols = [x + y * chf.width for y in range(y0, y0 + h) for x in range(x0, x0 + w)]
        if any(region in chf.reg[chf.cell_start[c] : chf.cell_start[c + 1]] for c in cols):
            boxes.append((x0, y0, w, h, region))
    xmin, ymin, pw, ph, regs = (np.array(v, dtype=np.int64) for v in zip(*boxes, strict=True))
    slow = [slow_height_data(chf, None, r, x0, y0, w, h) for x0, y0, w, h, r in boxes]
    off = np.concatenate([[0], np.cumsum(pw * ph)])
    whole = _Patches(
        np.concatenate([d.ravel() for d in slow]).astype(np.uint16), off, xmin, ymin, pw, ph,
        ics, ch, 1,
    )  # fmt: skip
    pid = np.concatenate([np.full(w * h, k) for k, (_, _, w, h, _) in enumerate(boxes)])
    cx = np.concatenate([x0 + np.arange(w * h) % w for x0, _, w, h, _ in boxes])
    cz = np.concatenate([y0 + np.arange(w * h) // w for _, y0, w, h, _ in boxes])
    fx = ((cx + F32(0.5)) * cs).astype(F32)
    fz = ((cz + F32(0.5)) * cs).astype(F32)
    fy = (rng.random(pid.size) * 10).astype(F32)
    dummy = (np.zeros((1, 3), dtype=np.int64), np.zeros((len(boxes), 1), dtype=np.int64))
    for levels in (1, 2, 3):
        monkeypatch.setattr(detail, "LOCAL_FLOOD_LEVELS", levels)
        local = _LocalHeights(
            chf, dummy[0], dummy[1], np.ones(len(boxes), dtype=np.int64), regs, xmin, ymin,
            pw, ph, 0, ics, 1,
        )  # fmt: skip
        got = local.height(pid, fx, fy, fz)
        np.testing.assert_array_equal(got, whole.height(pid, fx, fy, fz), err_msg=f"{levels}")


def test_vertex_cap_on_rough_ground():
    """Long edges over rough ground with a tiny error: Recast's 127-vertex cap per polygon."""
    rng = np.random.default_rng(7)
    chf = flat_chf(width=40, height=40)
    chf.y = rng.integers(0, 30, size=chf.y.size).astype(np.uint16)
    hexagon = ((1, 10), (1, 30), (20, 39), (39, 30), (39, 10), (20, 1))
    pmesh = square_pmesh(chf, corners=hexagon)
    dmesh = build_poly_mesh_detail(pmesh, chf, 0.3, 0.0)
    # Edges alone would give 6 + 6 * 30 vertices; Recast caps the edges (the last two get no
    # samples) and the interior fills up to 127. (Coverage is not checked: with ~125 nearly
    # collinear hull points Recast's own Delaunay folds a few triangles; checked identical to
    # the C++ on this very input: 127 vertices, 128 triangles.)
    np.testing.assert_array_equal(dmesh.meshes, [[0, 127, 0, 128]])
    assert dmesh.tris[:, :3].max() < 127


def test_progress_is_reported():
    chf = flat_chf()
    pmesh = square_pmesh(chf)
    seen = []
    build_poly_mesh_detail(pmesh, chf, 1.0, 0.25, progress=lambda f, s: seen.append((f, s)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(isinstance(s, str) and s for _, s in seen)


@pytest.mark.parametrize("heights", ["local", "small chunks whole", "whole"])
@pytest.mark.parametrize("budget", [1, 5000])
@pytest.mark.parametrize("workers", [1, 2])
def test_polygon_chunks_give_the_same_detail_mesh(built, budget, workers, heights, monkeypatch):
    """Height patches built a few polygons at a time (1 cell: one polygon per chunk), on one
    thread or two, read cell by cell (`LOCAL_HEIGHTS`), whole for chunks below
    `LOCAL_MIN_CELLS`, or whole, give the same detail mesh as all at once, bit for bit."""
    import core.detail as detail_module

    ref, pmesh, chf, whole = built
    assert len(detail_module.patch_chunks(np.full(len(pmesh.polys), 100), budget)) > 1
    monkeypatch.setattr(detail_module, "PATCH_CELLS_PER_CHUNK", budget)
    monkeypatch.setattr(detail_module, "PATCH_WORKERS", workers)
    monkeypatch.setattr(detail_module, "LOCAL_WORKERS", workers)
    monkeypatch.setattr(detail_module, "LOCAL_HEIGHTS", heights != "whole")
    monkeypatch.setattr(detail_module, "LOCAL_MIN_CELLS", 0 if heights == "local" else 1 << 30)
    pools = []

    class CountedPool(threads.ThreadPoolExecutor):
        def __init__(self, *args, **kwargs):
            pools.append(self)
            super().__init__(*args, **kwargs)

    # The stage's pools are `core.threads.map_pieces`'.
    monkeypatch.setattr(threads, "ThreadPoolExecutor", CountedPool)
    sd, se = ref["cfg_detailSampleDist"], ref["cfg_detailSampleMaxError"]
    chunked = build_poly_mesh_detail(pmesh, chf, sd, se)
    # Two threads only when every polygon fits the budget (1 cell: none does).
    assert len(pools) == (workers == 2 and budget == 5000)
    np.testing.assert_array_equal(chunked.meshes, whole.meshes)
    np.testing.assert_array_equal(chunked.tris, whole.tris)
    np.testing.assert_array_equal(chunked.verts, whole.verts)


def test_patch_chunks_respect_the_budget():
    sizes = np.array([3, 4, 10, 1, 1, 1, 2])
    chunks = patch_chunks(sizes, 5)
    assert chunks == [(0, 1), (1, 2), (2, 3), (3, 7)]
    assert patch_chunks(np.zeros(0, dtype=np.int64), 5) == []


def test_vertex_cap_in_chunks(monkeypatch):
    """The edge-by-edge capped path in a chunk that does not start at polygon 0."""
    import core.detail as detail_module

    rng = np.random.default_rng(7)
    chf = flat_chf(width=40, height=40)
    chf.y = rng.integers(0, 30, size=chf.y.size).astype(np.uint16)
    small = square_pmesh(chf, corners=((1, 1), (1, 5), (5, 5), (5, 1)))
    hexagon = square_pmesh(chf, corners=((1, 10), (1, 30), (20, 39), (39, 30), (39, 10), (20, 1)))
    both = SimpleNamespace(**vars(hexagon))
    nv = small.verts.shape[0]
    both.verts = np.concatenate([small.verts, hexagon.verts])
    polys2 = hexagon.polys.copy()
    polys2[:, :6] = np.where(polys2[:, :6] != 0xFFFF, polys2[:, :6] + nv, 0xFFFF)
    polys1 = np.full((1, polys2.shape[1]), 0xFFFF, dtype=polys2.dtype)
    polys1[0] = small.polys[0]
    both.polys = np.concatenate([polys1, polys2])
    both.regs = np.concatenate([small.regs, hexagon.regs])
    whole = build_poly_mesh_detail(both, chf, 0.3, 0.0)
    monkeypatch.setattr(detail_module, "PATCH_CELLS_PER_CHUNK", 1)
    chunked = build_poly_mesh_detail(both, chf, 0.3, 0.0)
    assert whole.meshes[1, 1] == 127
    np.testing.assert_array_equal(chunked.meshes, whole.meshes)
    np.testing.assert_array_equal(chunked.tris, whole.tris)
    np.testing.assert_array_equal(chunked.verts, whole.verts)


@pytest.mark.parametrize("joined", [False, True])
def test_seed_flags_equal_a_per_span_walk(joined):
    """`_seed_flags` of every span: a span is a flood seed when some connected neighbour lies
    in another region; also with the regions second in a field joined after another mesh's
    (span ids shifted by ``layer_at``)."""
    from core import detail

    chf = ref_compact(load_reference("dungeon"))
    reg = np.asarray(chf.reg)
    n = reg.shape[0]
    spans = np.arange(n, dtype=np.int64)
    if joined:
        other = np.where(reg != 0, 1 - reg.astype(np.int64), 0)  # none of this mesh's ids
        field = np.concatenate([other, reg.astype(np.int64)])
        got = detail._seed_flags(field, chf.neighbor, spans + n, np.full(n, n, dtype=np.int64))
    else:
        got = detail._seed_flags(reg, chf.neighbor, spans)
    nbr = chf.neighbor.tolist()
    regs = reg.tolist()
    want = [any(j >= 0 and regs[j] != regs[i] for j in nbr[i]) for i in range(len(regs))]
    assert got.tolist() == want
    assert 0 < sum(want) < len(want)


@pytest.mark.parametrize("edge_max_error", [1.3, 6.0, 40.0])
def test_spiral_walk_clamped_to_the_patches_and_in_blocks_is_recast_s(monkeypatch, edge_max_error):
    # getHeight's spiral reaches ceil(max_edge_error) cells (the panel takes up to 100000:
    # 2000 took 2.8 GB, 1000 on a 36-triangle scene 680 MB). Rings wider than the largest
    # patch lie outside every patch, and the unset cells' walks are independent: clamped and
    # in blocks of a few rows, the same detail meshes as the whole spiral at once.
    from core import detail as D
    from core import pipeline
    from core.config import NavConfig
    from core.objio import read_obj

    from .refdata import mesh_path

    for name in ("nav_test", "dungeon"):
        verts, tris = read_obj(mesh_path(name))
        config = NavConfig(edge_max_error=edge_max_error)
        clamped = pipeline.bake(verts, tris, config).detail
        monkeypatch.setattr(D, "_spiral_radius", lambda radius, w, h: int(radius))
        monkeypatch.setattr(D, "SPIRAL_PAIRS_PER_PASS", 64)
        whole = pipeline.bake(verts, tris, config).detail
        monkeypatch.undo()
        for field in ("meshes", "verts", "tris"):
            assert np.array_equal(getattr(clamped, field), getattr(whole, field)), (name, field)


def test_no_sample_pairs_in_blocks_give_the_same_detail_in_bounded_memory(monkeypatch):
    # Fine sampling (detail_sample_dist 0.9, max error 0) held every (sample, hull triangle)
    # pair at once: undulating at cell_size 0.3 peaked at 1.9 GB, at 0.15 a MemoryError.
    # Blocks of pairs give the same detail mesh, in memory that does not grow with the pairs.
    import tracemalloc

    from core import pipeline
    from core.config import NavConfig
    from core.objio import read_obj

    verts, tris = read_obj(mesh_path("dungeon"))
    config = NavConfig(detail_sample_dist=0.9, detail_sample_max_error=0.0)
    whole = pipeline.bake(verts, tris, config).detail
    monkeypatch.setattr(detail, "NO_SAMPLE_PAIR_BLOCK", 1000)
    tracemalloc.start()
    try:
        blocked = pipeline.bake(verts, tris, config).detail
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    for name in ("meshes", "verts", "tris"):
        np.testing.assert_array_equal(getattr(blocked, name), getattr(whole, name))
    assert peak < 60 * 1024**2, peak  # the whole bake: 30 MB (111 MB with all pairs at once)
