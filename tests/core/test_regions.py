"""Distance field and region partitioning: Recast parity, slow literal oracles, small cases."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

from core.compact import BORDER_REG, build_compact_heightfield
from core.context import BuildContext
from core.errors import VoxNavError
from core.regions import (
    build_distance_field,
    build_distance_fields,
    build_regions,
    build_regions_layers,
    build_regions_monotone,
)

from . import oracle
from .refdata import MESHES, load_reference, ref_compact
from .test_area import _nb, _raster, flat_compact, random_compact, slow_chamfer
from .test_compact import make_heightfield

# ------------------------------------------------------------------------------------------
# Slow, literal ports of RecastRegion.cpp (Python loops over spans; the oracle).


def slow_distance_field(chf):
    n = chf.span_count
    area = chf.area
    src = [0xFFFF] * n
    for i in range(n):
        nc = 0
        for d in range(4):
            a = _nb(chf, i, d)
            if a >= 0 and area[a] == area[i]:
                nc += 1
        if nc != 4:
            src[i] = 0
    src = slow_chamfer(chf, src)
    max_dist = max(src) if n else 0
    dst = [0] * n
    for i in range(n):
        cd = src[i]
        if cd <= 2:
            dst[i] = cd
            continue
        d = cd
        for k in range(4):
            a = _nb(chf, i, k)
            if a >= 0:
                d += src[a]
                b = _nb(chf, a, (k + 1) & 3)
                d += src[b] if b >= 0 else cd
            else:
                d += cd * 2
        dst[i] = (d + 5) // 9
    return src, dst, max_dist


def _paint(chf, reg, border_size, rid):
    if border_size <= 0:
        return rid
    w, h = chf.width, chf.height
    bw, bh = min(w, border_size), min(h, border_size)
    for x0, x1, y0, y1 in ((0, bw, 0, h), (w - bw, w, 0, h), (0, w, 0, bh), (0, w, h - bh, h)):
        for y in range(y0, y1):
            for x in range(x0, x1):
                c = x + y * w
                for i in range(int(chf.cell_start[c]), int(chf.cell_start[c + 1])):
                    if chf.area[i] != 0:
                        reg[i] = rid | BORDER_REG
        rid += 1
    return rid


def slow_watershed(chf, dist, max_distance, border_size=0):
    """rcBuildRegions up to mergeAndFilterRegions, literally; returns (srcReg, regionId)."""
    n = chf.span_count
    area = chf.area
    reg = [0] * n
    sdist = [0] * n
    rid = _paint(chf, reg, border_size, 1)
    level = (max_distance + 1) & ~1
    stacks = [[] for _ in range(8)]

    def expand(stack, level, max_iter):
        for j in range(len(stack)):
            if stack[j] >= 0 and reg[stack[j]] != 0:
                stack[j] = -1
        it = 0
        while stack:
            failed = 0
            dirty = []
            for j, i in enumerate(stack):
                if i < 0:
                    failed += 1
                    continue
                r, d2 = reg[i], 0xFFFF
                for d in range(4):
                    a = _nb(chf, i, d)
                    if a < 0 or area[a] != area[i]:
                        continue
                    if reg[a] > 0 and (reg[a] & BORDER_REG) == 0 and sdist[a] + 2 < d2:
                        r, d2 = reg[a], sdist[a] + 2
                if r:
                    stack[j] = -1
                    dirty.append((i, r, d2))
                else:
                    failed += 1
            for i, r, d2 in dirty:
                reg[i], sdist[i] = r, d2
            if failed == len(stack):
                break
            if level > 0:
                it += 1
                if it >= max_iter:
                    break

    def flood(seed, level, r):
        ar_area = area[seed]
        stack = [seed]
        reg[seed], sdist[seed] = r, 0
        lev = level - 2 if level >= 2 else 0
        count = 0
        while stack:
            ci = stack.pop()
            ar = 0
            for d in range(4):
                a = _nb(chf, ci, d)
                if a < 0 or area[a] != ar_area:
                    continue
                nr = reg[a]
                if nr & BORDER_REG:
                    continue
                if nr != 0 and nr != r:
                    ar = nr
                    break
                b = _nb(chf, a, (d + 1) & 3)
                if b >= 0 and area[b] == ar_area:
                    nr2 = reg[b]
                    if nr2 != 0 and nr2 != r:
                        ar = nr2
                        break
            if ar:
                reg[ci] = 0
                continue
            count += 1
            for d in range(4):
                a = _nb(chf, ci, d)
                if a < 0 or area[a] != ar_area:
                    continue
                if dist[a] >= lev and reg[a] == 0:
                    reg[a], sdist[a] = r, 0
                    stack.append(a)
        return count > 0

    sid = -1
    order = list(_raster(chf))
    while level > 0:
        level = level - 2 if level >= 2 else 0
        sid = (sid + 1) & 7
        if sid == 0:
            stacks = [[] for _ in range(8)]
            for i in order:
                if area[i] == 0 or reg[i] != 0:
                    continue
                s = (level >> 1) - (int(dist[i]) >> 1)
                if s >= 8:
                    continue
                stacks[max(s, 0)].append(i)
        else:
            stacks[sid] += [i for i in stacks[sid - 1] if i >= 0 and reg[i] == 0]
        expand(stacks[sid], level, 8)
        for i in stacks[sid]:
            if i >= 0 and reg[i] == 0 and flood(i, level, rid):
                rid += 1
    expand([i for i in order if area[i] != 0 and reg[i] == 0], 0, 64)
    return reg, rid


def _remove_adjacent(cons):
    i = 0
    while i < len(cons) and len(cons) > 1:
        ni = (i + 1) % len(cons)
        if cons[i] == cons[ni]:
            cons.pop(i)
        else:
            i += 1


def _solid(chf, reg, i, d):
    a = _nb(chf, i, d)
    r = reg[a] if a >= 0 else 0
    return r != reg[i], r


def _walk_contour(chf, reg, i, d):
    start_i, start_d = i, d
    _, cur = _solid(chf, reg, i, d)
    cont = [cur]
    it = 0
    while True:
        it += 1
        if it >= 40000:
            break
        solid, r = _solid(chf, reg, i, d)
        if solid:
            if r != cur:
                cur = r
                cont.append(cur)
            d = (d + 1) & 3
        else:
            i = _nb(chf, i, d)
            d = (d + 3) & 3
        if i == start_i and d == start_d:
            break
    if len(cont) > 1:
        j = 0
        while j < len(cont):
            nj = (j + 1) % len(cont)
            if cont[j] == cont[nj]:
                cont.pop(j)
            else:
                j += 1
    return cont


def slow_merge_and_filter(chf, reg, max_id, min_area, merge_area):
    """mergeAndFilterRegions, literally (lists, not sets)."""
    nreg = max_id + 1
    R = [
        dict(count=0, id=i, area=0, overlap=False, cons=[], floors=[], visited=False)
        for i in range(nreg)
    ]
    for i in _raster(chf):
        r = reg[i]
        if r == 0 or r >= nreg:
            continue
        rg = R[r]
        rg["count"] += 1
        c = int(chf.span_x[i]) + int(chf.span_y[i]) * chf.width
        for j in range(int(chf.cell_start[c]), int(chf.cell_start[c + 1])):
            if j == i:
                continue
            f = reg[j]
            if f == 0 or f >= nreg:
                continue
            if f == r:
                rg["overlap"] = True
            if f not in rg["floors"]:
                rg["floors"].append(f)
        if rg["cons"]:
            continue
        rg["area"] = int(chf.area[i])
        for d in range(4):
            if _solid(chf, reg, i, d)[0]:
                rg["cons"] = _walk_contour(chf, reg, i, d)
                break
    for i in range(nreg):
        rg = R[i]
        if rg["id"] == 0 or rg["id"] & BORDER_REG or rg["count"] == 0 or rg["visited"]:
            continue
        border, count, stack, trace = False, 0, [i], []
        rg["visited"] = True
        while stack:
            ri = stack.pop()
            count += R[ri]["count"]
            trace.append(ri)
            for c in R[ri]["cons"]:
                if c & BORDER_REG:
                    border = True
                    continue
                nr = R[c]
                if nr["visited"] or nr["id"] == 0 or nr["id"] & BORDER_REG:
                    continue
                stack.append(nr["id"])
                nr["visited"] = True
        if count < min_area and not border:
            for t in trace:
                R[t]["count"] = 0
                R[t]["id"] = 0

    def can_merge(a, b):
        if a["area"] != b["area"]:
            return False
        if sum(1 for c in a["cons"] if c == b["id"]) > 1:
            return False
        return b["id"] not in a["floors"]

    while True:
        merges = 0
        for i in range(nreg):
            rg = R[i]
            if rg["id"] == 0 or rg["id"] & BORDER_REG or rg["overlap"] or rg["count"] == 0:
                continue
            if rg["count"] > merge_area and 0 in rg["cons"]:
                continue
            smallest, mid = 0xFFFFFFF, rg["id"]
            for c in rg["cons"]:
                if c & BORDER_REG:
                    continue
                m = R[c]
                if m["id"] == 0 or m["id"] & BORDER_REG or m["overlap"]:
                    continue
                if m["count"] < smallest and can_merge(rg, m) and can_merge(m, rg):
                    smallest, mid = m["count"], m["id"]
            if mid == rg["id"]:
                continue
            old, tg = rg["id"], R[mid]
            acon, bcon = list(tg["cons"]), rg["cons"]
            if rg["id"] not in acon or tg["id"] not in bcon:
                continue
            ia, ib = acon.index(rg["id"]), bcon.index(tg["id"])
            tg["cons"] = [acon[(ia + 1 + k) % len(acon)] for k in range(len(acon) - 1)]
            tg["cons"] += [bcon[(ib + 1 + k) % len(bcon)] for k in range(len(bcon) - 1)]
            _remove_adjacent(tg["cons"])
            for f in rg["floors"]:
                if f not in tg["floors"]:
                    tg["floors"].append(f)
            tg["count"] += rg["count"]
            rg["count"] = 0
            rg["cons"] = []
            for o in R:
                if o["id"] == 0 or o["id"] & BORDER_REG:
                    continue
                if o["id"] == old:
                    o["id"] = mid
                changed = False
                for k, c in enumerate(o["cons"]):
                    if c == old:
                        o["cons"][k] = mid
                        changed = True
                o["floors"] = [mid if f == old else f for f in o["floors"]]
                if changed:
                    _remove_adjacent(o["cons"])
            merges += 1
        if merges == 0:
            break
    return _slow_compress(R, reg)


def _slow_compress(R, reg):
    nreg = len(R)
    remap = [r["id"] != 0 and not (r["id"] & BORDER_REG) for r in R]
    gen = 0
    for i in range(nreg):
        if not remap[i]:
            continue
        old = R[i]["id"]
        gen += 1
        for j in range(i, nreg):
            if R[j]["id"] == old:
                R[j]["id"] = gen
                remap[j] = False
    out = [r if r & BORDER_REG else R[r]["id"] for r in reg]
    return np.array(out, dtype=np.int64), gen


# ------------------------------------------------------------------------------------------
# Parity with Recast


@pytest.mark.parametrize("mesh", MESHES)
def test_distance_field_matches_recast(mesh):
    ref = load_reference(mesh)
    chf = ref_compact(ref, with_regions=False)
    raw, dist, max_distance = build_distance_field(chf)
    np.testing.assert_array_equal(raw, ref["chf_dist_raw"])
    np.testing.assert_array_equal(dist, ref["chf_dist"])
    assert max_distance == int(ref["chf_max_distance"])
    assert raw.dtype == np.uint16 and dist.dtype == np.uint16


#: Flood batch thresholds: every batch breadth first, a mix of both ways within one
#: watershed (on these fields some batches' pools are above 200 spans, others below), every
#: batch as connected sets.
FLOOD_WAYS = {"bfs": 0, "mixed": 200, "sets": 1 << 40}


@pytest.fixture(params=sorted(FLOOD_WAYS))
def flood_way(request, monkeypatch):
    """Runs the test with `_flood_batch` taking each of its ways (`FLOOD_WAYS`)."""
    from core import regions

    monkeypatch.setattr(regions, "FLOOD_SETS_MAX_SPANS", FLOOD_WAYS[request.param])
    return request.param


@pytest.mark.parametrize("mesh", MESHES)
def test_watershed_matches_recast(mesh, flood_way):
    ref = load_reference(mesh)
    chf = ref_compact(ref, with_regions=False)
    reg, max_regions = build_regions(
        chf,
        ref["chf_dist"],
        int(ref["chf_max_distance"]),
        int(ref["cfg_minRegionArea"]),
        int(ref["cfg_mergeRegionArea"]),
    )
    assert reg.dtype == np.uint16
    assert int((reg != ref["chf_reg"]).sum()) == 0
    assert max_regions == int(ref["chf_max_regions"])
    assert np.unique(reg[reg > 0]).size == int(ref["count_regions"])


# ------------------------------------------------------------------------------------------
# Slow oracles on random fields


@pytest.mark.parametrize("seed", range(12))
def test_distance_field_matches_slow_oracle(seed):
    chf = random_compact(seed, areas=(0, 5, 63, 63, 63))
    raw, dist, max_distance = build_distance_field(chf)
    want_raw, want_dist, want_max = slow_distance_field(chf)
    np.testing.assert_array_equal(raw, want_raw)
    np.testing.assert_array_equal(dist, want_dist)
    assert max_distance == want_max


def test_distance_fields_reject_an_area_array_of_the_wrong_length():
    chf = random_compact(0)
    with pytest.raises(VoxNavError, match="not one per span"):
        build_distance_fields(chf, [chf.area, chf.area[:-1]])


def _random_open_compact(seed, size=24, areas=(63,)):
    """A random floor plan (blobs of floor on a few heights) big enough for real regions."""
    rng = np.random.default_rng(seed)
    cols = {}
    hole = rng.random((size, size)) < 0.06
    level = (rng.random((size, size)) < 0.3).astype(int) * 3
    for y in range(size):
        for x in range(size):
            if hole[y, x]:
                continue
            spans = [(0, 1 + level[y, x], int(rng.choice(areas)))]
            if (x + y) % 7 == 0 and x > size // 2:
                spans.append((14, 15, 63))  # a second floor over part of the map
            cols[(x, y)] = spans
    hf = make_heightfield(size, size, cols)
    return build_compact_heightfield(hf, 10, 4)


@pytest.mark.parametrize("seed", range(4))
def test_distance_fields_at_once_equal_one_by_one(seed):
    """Several area arrays on one heightfield (several agents' erosions) through the chamfer's
    rows and the blur together: each field as `build_distance_field` gives it alone."""
    chf = _random_open_compact(seed, size=32)
    rng = np.random.default_rng(seed)
    areas = [chf.area] + [
        np.where(rng.random(chf.area.shape[0]) < p, 0, chf.area).astype(np.uint8)
        for p in (0.05, 0.3)
    ]
    got = build_distance_fields(chf, areas)
    assert len(got) == len(areas)
    assert max(field[2] for field in got) > 8  # deep enough for the row scans and the blur
    for area, (raw, dist, max_distance) in zip(areas, got, strict=True):
        alone = build_distance_field(dataclasses.replace(chf, area=area))
        np.testing.assert_array_equal(raw, alone[0])
        np.testing.assert_array_equal(dist, alone[1])
        assert raw.dtype == dist.dtype == np.uint16
        assert max_distance == alone[2]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("border_size", [0, 2])
def test_watershed_matches_slow_oracle(seed, border_size, flood_way):
    chf = _random_open_compact(seed, areas=(63, 63, 63, 7) if seed % 2 else (63,))
    _, dist, max_distance = build_distance_field(chf)
    reg_raw, rid = slow_watershed(chf, dist, max_distance, border_size)
    want, want_max = slow_merge_and_filter(chf, reg_raw, rid, 8, 20)
    got, got_max = build_regions(chf, dist, max_distance, 8, 20, border_size)
    np.testing.assert_array_equal(got, want)
    assert got_max == want_max


def _fields_on_one_layout(seed):
    """Four area arrays on one random floor plan (several agents' erosions): the plan's own,
    two with spans nulled at random, and one with every other span nulled (a checkerboard:
    every span on a border, no level at all)."""
    chf = _random_open_compact(seed, size=32)
    rng = np.random.default_rng(seed)
    areas = [chf.area] + [
        np.where(rng.random(chf.area.shape[0]) < p, 0, chf.area).astype(np.uint8)
        for p in (0.03, 0.2)
    ]
    checker = (np.asarray(chf.span_x) + np.asarray(chf.span_y)) % 2 == 0
    areas.append(np.where(checker, chf.area, 0).astype(np.uint8))
    chfs = [dataclasses.replace(chf, area=area) for area in areas]
    fields = [build_distance_field(c) for c in chfs]
    return chfs, [f[1] for f in fields], [f[2] for f in fields]


def _count_watersheds(monkeypatch) -> list[int]:
    """A list that grows by one at every watershed run from now on."""
    from core import regions

    calls: list[int] = []
    watershed = regions._watershed

    def counted(*args, **kwargs):
        calls.append(1)
        return watershed(*args, **kwargs)

    monkeypatch.setattr(regions, "_watershed", counted)
    return calls


@pytest.mark.parametrize("seed", range(6))
def test_regions_together_equal_one_by_one(seed, flood_way, monkeypatch):
    """One watershed over the union of several fields on one layout (agents' erosions), each
    field's level schedule shifted to the highest: every field's regions as `build_regions`
    gives them alone (and the union was used: one watershed call)."""
    from core import regions

    chfs, dists, maxima = _fields_on_one_layout(seed)
    # The fields start (and end) on different levels, one on none.
    assert len(set(maxima)) >= 3 and min(maxima) <= 1
    calls = _count_watersheds(monkeypatch)
    ctxs = [BuildContext() for _ in chfs]
    got = regions.build_regions_together(chfs, dists, maxima, 8, 20, ctxs=ctxs)
    assert len(calls) == 1
    for chf, dist, top, (reg, max_regions) in zip(chfs, dists, maxima, got, strict=True):
        want, want_max = build_regions(chf, dist, top, 8, 20)
        np.testing.assert_array_equal(reg, want)
        assert reg.dtype == np.uint16 and max_regions == want_max
    assert max(r[1] for r in got) > 3


def test_regions_together_grow_a_field_to_the_end_on_its_last_level():
    """A field that ends before the others (a lower start level) grows its regions without
    the 8-pass cap on its own last level, as alone: a corridor of 24 one-wide spans off a
    room, reached only by that growth (its spans are all on the border), stays the room's
    region instead of getting a new one past the 8th span."""
    from core import regions

    cols = {(x, y): [(0, 2, 63)] for x in range(16) for y in range(16)}
    cols.update({(x, 8): [(0, 2, 63)] for x in range(16, 40)})
    chf = build_compact_heightfield(make_heightfield(40, 16, cols), 4, 1)
    x = np.asarray(chf.span_x)
    strips = np.where((x < 16) & (x % 8 == 0), 0, chf.area).astype(np.uint8)
    chfs = [chf, dataclasses.replace(chf, area=strips)]
    fields = [build_distance_field(c) for c in chfs]
    dists, maxima = [f[1] for f in fields], [f[2] for f in fields]
    assert maxima[1] + 4 <= maxima[0]  # the strips' field starts (and ends) levels earlier
    got = regions.build_regions_together(chfs, dists, maxima, 0, 0)
    corridor = x >= 16
    for c, dist, top, (reg, max_regions) in zip(chfs, dists, maxima, got, strict=True):
        want, want_max = build_regions(c, dist, top, 0, 0)
        assert len(np.unique(want[corridor])) == 1  # the corridor is one room's region
        np.testing.assert_array_equal(reg, want)
        assert max_regions == want_max


@pytest.mark.parametrize("bound", ["spans", "ids"])
def test_regions_together_fall_back_to_one_by_one(bound, monkeypatch):
    """Past the span bound, or when the union's ids would reach the id limit, each field is
    partitioned alone: the same regions."""
    from core import regions

    chfs, dists, maxima = _fields_on_one_layout(1)
    want = [build_regions(c, d, m, 8, 20) for c, d, m in zip(chfs, dists, maxima, strict=True)]
    if bound == "spans":
        monkeypatch.setattr(regions, "TOGETHER_MAX_SPANS", chfs[0].span_count)
    else:
        monkeypatch.setattr(regions, "_UNION_ID_LIMIT", 4)
    calls = _count_watersheds(monkeypatch)
    got = regions.build_regions_together(chfs, dists, maxima, 8, 20)
    assert len(calls) == (len(chfs) if bound == "spans" else len(chfs) + 1)
    for (reg, max_regions), (want_reg, want_max) in zip(got, want, strict=True):
        np.testing.assert_array_equal(reg, want_reg)
        assert max_regions == want_max


def test_regions_together_refuse_fields_on_other_layouts():
    from core import regions

    chfs, dists, maxima = _fields_on_one_layout(0)
    other = _random_open_compact(5, size=32)
    _, other_dist, other_max = build_distance_field(other)
    with pytest.raises(VoxNavError, match="share one span layout"):
        regions.build_regions_together(
            [chfs[0], other], [dists[0], other_dist], [maxima[0], other_max], 8, 20
        )
    with pytest.raises(VoxNavError, match="one distance field and maximum per field"):
        regions.build_regions_together(chfs, dists[:-1], maxima, 8, 20)


def _random_layered(seed):
    """A random heightfield with stepped floors, holes, up to a few stacked layers and mixed
    areas, plus random settings: (chf, min_region_area, merge_region_area, border_size)."""
    rng = np.random.default_rng(seed)
    w, h = int(rng.integers(4, 40)), int(rng.integers(4, 40))
    base = rng.integers(0, 3, size=(h, w)).cumsum(axis=1) % 7  # gentle steps along x
    areas = [0, 63, 63, 63, 5] if seed % 3 else [63]
    cols = {}
    for y in range(h):
        for x in range(w):
            if rng.random() < 0.08:
                continue
            top = int(base[y, x]) + 1
            spans = [(0, top, int(rng.choice(areas)))]
            lo = top + int(rng.integers(3, 8))
            while rng.random() < 0.35 and lo < 60:
                hi = lo + int(rng.integers(1, 3))
                spans.append((lo, hi, int(rng.choice(areas))))
                lo = hi + int(rng.integers(3, 8))
            cols[(x, y)] = spans
    walkable_height, walkable_climb = int(rng.integers(2, 5)), int(rng.integers(1, 4))
    chf = build_compact_heightfield(make_heightfield(w, h, cols), walkable_height, walkable_climb)
    min_area, merge_area = int(rng.integers(0, 30)), int(rng.integers(0, 60))
    border_size = int(rng.integers(0, 4)) if seed % 2 else 0
    return chf, min_area, merge_area, border_size


#: Random cases for the sweep partitionings: 24 layered fields, 6 open floor plans.
RANDOM_FIELDS = list(range(30))


@functools.cache
def _random_field(k):
    """(chf, min_area, merge_area, border_size) of random case ``k``."""
    if k < 24:
        return _random_layered(k)
    seed = k - 24
    chf = _random_open_compact(10 + seed, areas=(63, 63, 5) if seed % 2 else (63,))
    return chf, 8, 20, 2 * (seed % 2)


@pytest.mark.parametrize("k", RANDOM_FIELDS)
def test_monotone_matches_literal_oracle(k):
    chf, min_area, merge_area, border_size = _random_field(k)
    want, want_max, _ = oracle.build_regions_monotone(chf, border_size, min_area, merge_area)
    got, got_max = build_regions_monotone(chf, None, 0, min_area, merge_area, border_size)
    np.testing.assert_array_equal(got, np.array(want, dtype=np.uint16))
    assert got_max == want_max


@pytest.mark.parametrize("k", RANDOM_FIELDS)
def test_layers_match_literal_oracle(k):
    chf, min_area, merge_area, border_size = _random_field(k)
    want, want_max = oracle.build_layer_regions(chf, border_size, min_area)
    got, got_max = build_regions_layers(chf, None, 0, min_area, merge_area, border_size)
    np.testing.assert_array_equal(got, np.array(want, dtype=np.uint16))
    assert got_max == want_max


@pytest.mark.parametrize("seed", range(8))
def test_watershed_small_random_fields_match_slow_oracle(seed, flood_way):
    chf = random_compact(seed)
    _, dist, max_distance = build_distance_field(chf)
    reg_raw, rid = slow_watershed(chf, dist, max_distance)
    want, want_max = slow_merge_and_filter(chf, reg_raw, rid, 2, 4)
    got, got_max = build_regions(chf, dist, max_distance, 2, 4)
    np.testing.assert_array_equal(got, want)
    assert got_max == want_max


# ------------------------------------------------------------------------------------------
# Hand-built cases


def _regions(chf, **kw):
    _, dist, max_distance = build_distance_field(chf)
    return build_regions(chf, dist, max_distance, kw.get("min_area", 0), kw.get("merge", 0))


def test_corridor_is_one_region():
    mask = np.zeros((5, 30), dtype=bool)
    mask[1:4, :] = True
    reg, _ = _regions(flat_compact(mask))
    assert np.unique(reg).tolist() == [1]


def test_room_with_pillar_is_covered():
    mask = np.ones((16, 16), dtype=bool)
    mask[7:9, 7:9] = False
    chf = flat_compact(mask)
    reg, max_regions = _regions(chf, min_area=8, merge=20)
    assert (reg > 0).all()
    assert 1 <= np.unique(reg).size <= max_regions


def test_small_islands_are_removed():
    mask = np.zeros((12, 12), dtype=bool)
    mask[1:9, 1:9] = True
    mask[10:12, 10:12] = True  # a 4-span island
    chf = flat_compact(mask)
    reg, _ = _regions(chf, min_area=8, merge=0)
    island = (chf.span_x >= 10) & (chf.span_y >= 10)
    assert (reg[island] == 0).all() and (reg[~island] > 0).all()


def test_two_floors_joined_by_ramp():
    # Lower floor y 0..7, ramp at y 8..11 rising 3 per row, upper floor y 12..19 at height 13,
    # plus an unconnected slab above the lower floor: the slab must be its own region.
    cols = {}
    for x in range(10):
        for y in range(20):
            top = 1 if y < 8 else (1 + 3 * (y - 7) if y < 12 else 13)
            spans = [(0, top, 63)]
            if y < 6 and x < 6:
                spans.append((30, 31, 63))
            cols[(x, y)] = spans
    chf = build_compact_heightfield(make_heightfield(10, 20, cols), 10, 4)
    reg, _ = _regions(chf, min_area=0, merge=0)
    slab = chf.y == 31
    assert (reg > 0).all()
    assert set(reg[slab].tolist()).isdisjoint(reg[~slab].tolist())


def test_region_inputs_checked():
    chf = flat_compact(np.ones((4, 4), dtype=bool))
    with pytest.raises(VoxNavError, match="dist"):
        build_regions(chf, np.zeros(3, dtype=np.uint16), 0, 8, 20)
    with pytest.raises(VoxNavError, match="min_region_area"):
        build_regions(chf, np.zeros(chf.span_count, dtype=np.uint16), 0, -1, 20)


# ------------------------------------------------------------------------------------------
# Monotone and layers: hand-built cases


def _room_with_hole():
    """A 10 x 10 floor with a 2 x 2 hole at x, y = 4..5."""
    mask = np.ones((10, 10), dtype=bool)
    mask[4:6, 4:6] = False
    return flat_compact(mask)


def test_monotone_splits_around_a_hole_by_the_sweep_rule():
    # Rows 0-3 sweep as one region; in rows 4-5 two runs both sample region 1 below, so each
    # sees fewer samples than the row gives region 1 and both start new regions (2 left,
    # 3 right); row 6 samples 2 then 3 and starts region 4. Every region touches the outer
    # edge and is larger than merge_region_area 0, so none merges. Recast's max_regions
    # counts one more: mergeAndFilterRegions gets the next free sweep id (5) as the largest
    # id, and that spanless region keeps a number.
    chf = _room_with_hole()
    reg, max_regions = build_regions_monotone(chf, None, 0, 0, 0)
    x, y = np.asarray(chf.span_x), np.asarray(chf.span_y)
    want = np.where(y < 4, 1, np.where(y > 5, 4, np.where(x < 4, 2, 3)))
    np.testing.assert_array_equal(reg, want)
    assert max_regions == 5


def test_layers_join_the_monotone_pieces_when_nothing_overlaps():
    chf = _room_with_hole()
    reg, max_regions = build_regions_layers(chf, None, 0, 0, 0)
    assert (reg == 1).all()
    assert max_regions == 2  # + the spanless next free sweep id, as in Recast


def _ramp_over_floor():
    """A floor (top 1) over x 0..15, a slab (top 13) over it at x 0..5 and a ramp down from
    the slab in steps of 2 at x 6..10, ending at top 3 beside the floor (top 1) at x 11."""
    cols = {}
    for y in range(6):
        for x in range(16):
            spans = [(0, 1, 63)]
            if x < 6:
                spans.append((12, 13, 63))
            elif x <= 10:
                top = 13 - 2 * (x - 5)
                spans.append((top - 1, top, 63))
            cols[(x, y)] = spans
    return build_compact_heightfield(make_heightfield(16, 6, cols), 1, 2)


def test_layers_keep_the_slab_apart_from_the_floor_under_it():
    chf = _ramp_over_floor()
    reg, max_regions = build_regions_layers(chf, None, 0, 0, 0)
    want, want_max = oracle.build_layer_regions(chf, 0, 0)
    np.testing.assert_array_equal(reg, np.array(want, dtype=np.uint16))
    assert max_regions == want_max
    slab = (np.asarray(chf.y) == 13) & (np.asarray(chf.span_x) < 6)
    under = (np.asarray(chf.y) == 1) & (np.asarray(chf.span_x) < 6)
    assert (reg > 0).all()
    assert set(reg[slab].tolist()).isdisjoint(reg[under].tolist())


@pytest.mark.parametrize("build", [build_regions_monotone, build_regions_layers])
def test_a_region_covering_a_column_twice_is_kept_as_recast_does_and_warned(build):
    # At x 10 the ramp span (top 3) and the floor span (top 1) both link left to the floor at
    # x 9 (the ramp is within climb of it), so Recast's sweep puts both in one run: one
    # region holds two spans of those columns.
    chf = _ramp_over_floor()
    ctx = BuildContext()
    reg, _ = build(chf, None, 0, 0, 0, ctx=ctx)
    if build is build_regions_monotone:
        want = oracle.build_regions_monotone(chf, 0, 0, 0)[0]
    else:
        want = oracle.build_layer_regions(chf, 0, 0)[0]
    np.testing.assert_array_equal(reg, np.array(want, dtype=np.uint16))
    at10 = np.asarray(chf.span_x) == 10
    assert np.unique(reg[at10 & (np.asarray(chf.span_y) == 0)]).size == 1
    assert len(ctx.warnings) == 1
    assert "1 region(s) hold two spans of one grid column" in ctx.warnings[0]
    # A plain floor says nothing.
    ctx = BuildContext()
    build(_room_with_hole(), None, 0, 0, 0, ctx=ctx)
    assert ctx.warnings == []


@pytest.mark.parametrize("build", [build_regions_monotone, build_regions_layers])
def test_small_islands_go_unless_they_touch_the_tile_border(build):
    mask = np.zeros((12, 12), dtype=bool)
    mask[1:9, 1:9] = True
    mask[10:12, 10:12] = True  # a 4-span island in the corner
    chf = flat_compact(mask)
    island = (np.asarray(chf.span_x) >= 10) & (np.asarray(chf.span_y) >= 10)
    reg, _ = build(chf, None, 0, 8, 0)
    assert (reg[island] == 0).all() and (reg[~island] > 0).all()
    # With a 1-cell tile border the island's inner span neighbours the border strip: kept.
    reg, _ = build(chf, None, 0, 8, 0, 1)
    inner = island & (np.asarray(chf.span_x) == 10) & (np.asarray(chf.span_y) == 10)
    assert (reg[inner] != 0).all() and (reg[inner] & BORDER_REG == 0).all()


def _checkerboard(n):
    """n x n cells, every other one walkable: each span is its own sweep region."""
    return flat_compact(np.add.outer(np.arange(n), np.arange(n)) % 2 == 0)


@pytest.mark.parametrize("build", [build_regions_monotone, build_regions_layers])
def test_sweep_past_32767_regions_warns_as_recast_drops_them(build):
    # 258 x 258 checkerboard: 33282 isolated spans, one sweep region each. Recast's ids past
    # 0x7FFF carry the tile-border flag: never filtered, no polygons. Kept for parity; said.
    chf = _checkerboard(258)
    ctx = BuildContext()
    reg, max_regions = build(chf, None, 0, 0, 0, ctx=ctx)
    flagged = (reg & BORDER_REG) != 0
    assert int(flagged.sum()) == chf.span_count - 0x7FFF
    assert max_regions == 0x7FFF and int(reg[~flagged].max()) == 0x7FFF
    assert len(ctx.warnings) == 1
    assert "more than 32767" in ctx.warnings[0] and f"{int(flagged.sum())} spans" in ctx.warnings[0]
    assert "Raise cell_size or bake in tiles" in ctx.warnings[0]
    # A smaller field says nothing.
    ctx = BuildContext()
    build(_checkerboard(40), None, 0, 0, 0, ctx=ctx)
    assert ctx.warnings == []


@pytest.mark.parametrize("build", [build_regions_monotone, build_regions_layers])
def test_sweep_past_65535_regions_is_an_error_not_a_wrapped_id(build):
    with pytest.raises(VoxNavError, match=r"ran out of region ids \(65535\).*raise cell_size"):
        build(_checkerboard(363), None, 0, 0, 0)


@pytest.mark.parametrize("k", RANDOM_FIELDS)
def test_watershed_on_layered_fields_matches_slow_oracle(k, flood_way):
    """Stacked layers give one-way links and regions meeting diagonally: the floods of a level
    batched together must still come out as one flood after the other."""
    chf, min_area, merge_area, border_size = _random_field(k)
    _, dist, max_distance = build_distance_field(chf)
    reg_raw, rid = slow_watershed(chf, dist, max_distance, border_size)
    want, want_max = slow_merge_and_filter(chf, reg_raw, rid, min_area, merge_area)
    got, got_max = build_regions(chf, dist, max_distance, min_area, merge_area, border_size)
    np.testing.assert_array_equal(got, want)
    assert got_max == want_max


def _one_way_field(seed, size=24):
    """Floors one or two cells high under slabs exactly ``walkable_height`` (2) above them,
    climb 3: a slab links down to a neighbour's floor while that floor links to the lower
    floor of the slab's own column (one-way links)."""
    rng = np.random.default_rng(seed)
    cols = {}
    for y in range(size):
        for x in range(size):
            if rng.random() < 0.05:
                continue
            top = int(rng.integers(0, 2))
            spans = [(0, top, 63)]
            if rng.random() < 0.4:
                spans.append((top + 2, top + 3, 63))
            cols[(x, y)] = spans
    return build_compact_heightfield(make_heightfield(size, size, cols), 2, 3)


@pytest.mark.parametrize("seed", range(8))
def test_watershed_with_one_way_links_matches_slow_oracle(seed, flood_way):
    chf = _one_way_field(seed)
    _, dist, max_distance = build_distance_field(chf)
    reg_raw, rid = slow_watershed(chf, dist, max_distance)
    want, want_max = slow_merge_and_filter(chf, reg_raw, rid, 4, 10)
    got, got_max = build_regions(chf, dist, max_distance, 4, 10)
    np.testing.assert_array_equal(got, want)
    assert got_max == want_max


def test_random_fields_exercise_the_flood_batch_cuts(monkeypatch):
    """The random cases above reach both ways out of a batch of floods: a region that could see
    an earlier one (the batch is cut), and a one-way link (that region floods alone)."""
    from core import regions

    seen = {"cut": 0, "alone": 0}
    batch, single = regions._flood_batch, regions._flood

    def counting_batch(*args):
        found, stop = batch(*args)
        seen["cut"] += stop is not None and bool(found)
        return found, stop

    def counting_single(*args):
        seen["alone"] += 1
        return single(*args)

    monkeypatch.setattr(regions, "_flood_batch", counting_batch)
    monkeypatch.setattr(regions, "_flood", counting_single)
    cases = [_random_field(k) for k in RANDOM_FIELDS] + [
        (_one_way_field(s), 4, 10, 0) for s in range(8)
    ]
    for chf, min_area, merge_area, border_size in cases:
        _, dist, max_distance = build_distance_field(chf)
        build_regions(chf, dist, max_distance, min_area, merge_area, border_size)
    assert seen["cut"] > 0 and seen["alone"] > 0, seen


# The outline walks of merge-and-filter over solid states only (_region_walks) against the
# state machine one state at a time (_walk_contour, the literal port)


def _partition_both_ways(monkeypatch, builder, chf, *args):
    from core import regions as R

    fast = builder(chf, *args)
    monkeypatch.setattr(R, "BATCH_WALKS", False)
    slow = builder(chf, *args)
    monkeypatch.setattr(R, "BATCH_WALKS", True)
    np.testing.assert_array_equal(fast[0], slow[0])
    assert fast[1] == slow[1]
    return fast


@pytest.mark.parametrize("mesh", ["dungeon", "nav_test", "undulating", "house", "bridge"])
@pytest.mark.parametrize("partition", ["watershed", "monotone"])
@pytest.mark.parametrize("radius", [0.6, 0.3])  # 0.3 on dungeon: spans without a region
def test_batched_outline_walks_equal_the_state_machine(mesh, partition, radius, monkeypatch):
    from core import pipeline
    from core.config import NavConfig
    from core.objio import read_obj

    from .refdata import mesh_path

    verts, tris = read_obj(mesh_path(mesh))
    result = pipeline.bake(verts, tris, NavConfig(partition=partition, agent_radius=radius))
    d = result.config.derived()
    chf = result.compact
    builder = pipeline.PARTITION_BUILDERS[partition]
    for border in (0, 3):
        reg, _ = _partition_both_ways(
            monkeypatch, builder, chf, chf.dist, int(chf.max_distance), d.min_region_area,
            d.merge_region_area, border,
        )  # fmt: skip
        assert reg.max() > 0


@pytest.mark.parametrize("seed", range(6))
def test_batched_outline_walks_equal_the_state_machine_random(seed, monkeypatch):
    from core import pipeline
    from core.regions import build_distance_field

    from .test_contours import make_chf, random_grid

    rng = np.random.default_rng(300 + seed)
    grid, heights = random_grid(rng, h=40, w=46, nseeds=9)
    area = rng.choice([63, 63, 63, 5], size=grid.shape)
    chf = make_chf(np.where(grid >= 0, 1, -1), heights=heights, area=area, climb=1)
    _, dist, max_distance = build_distance_field(chf)
    for partition in ("watershed", "monotone"):
        builder = pipeline.PARTITION_BUILDERS[partition]
        _partition_both_ways(monkeypatch, builder, chf, dist, max_distance, 4, 12, seed % 3)


def test_outline_walk_longer_than_recasts_limit_stops_where_recast_stops(monkeypatch):
    """A region whose outline takes more than 40000 walk states: Recast's walk stops there,
    so the batched walk hands it to the state machine and gets the same (cut) list."""
    from core import regions as R

    from .test_contours import make_chf

    grid = np.ones((3, 9000), dtype=np.int64)
    grid[0, 1::2] = 2  # a comb: single cells of region 2 along region 1's lower edge
    chf = make_chf(grid)
    g = R._Graph(chf)
    reg = np.append(np.asarray(chf.reg, dtype=np.int64), 0)
    starts = np.array([0])
    first = [int(reg[g.nbx[0, 0]])]
    machine = R._contour_machine
    calls = []
    monkeypatch.setattr(R, "_contour_machine", lambda *a: calls.append(1) or machine(*a))
    fast = R._region_walks(g, reg, starts, first)
    assert calls  # the walk went past the limit and was replayed state by state
    succ, emit = machine(g, reg)
    slow = R._walk_contour(0, succ, emit, first[0])
    assert fast == [slow]
    # Cut short: the full outline would list 0 and 2 alternately 4500 times each.
    assert 1000 < len(slow) < 9000


def test_outline_walks_end_at_their_start_without_a_replay(monkeypatch):
    """The walks step through pieces of states emitting one region: a piece never runs past
    a walk's start, so every walk of an ordinary level ends there (none goes round until
    Recast's 40000-state limit and is replayed state by state)."""
    from core import pipeline
    from core import regions as R
    from core.config import NavConfig
    from core.objio import read_obj

    from .refdata import mesh_path

    verts, tris = read_obj(mesh_path("dungeon"))
    chf = pipeline.bake(verts, tris, NavConfig()).compact
    d = NavConfig().derived()
    calls = []
    machine = R._contour_machine
    monkeypatch.setattr(R, "_contour_machine", lambda *a: calls.append(1) or machine(*a))
    reg, n_regions = R.build_regions(
        chf, chf.dist, int(chf.max_distance), d.min_region_area, d.merge_region_area
    )
    assert n_regions > 10 and not calls


def test_flood_stamps_start_over_before_outgrowing_their_type(monkeypatch):
    """The int32 flood marks are cleared and the stamps restart instead of overflowing: a
    watershed started with the stamp two below the type's limit (every span marked with it)
    gives the same regions."""
    from core import regions

    ref = load_reference("dungeon")
    chf = ref_compact(ref, with_regions=False)
    args = (ref["chf_dist"], int(ref["chf_max_distance"]), 8, 20)
    want_reg, want_max = build_regions(chf, *args)
    original = regions._Graph.__init__
    restarted = []

    def near_limit(self, chf):
        original(self, chf)
        self.flood_stamp = self.flood_stamp_limit - 2
        self.flood_seen[:] = self.flood_stamp

    def next_stamp(self):
        restarted.append(self.flood_stamp == self.flood_stamp_limit)
        return stamp_of(self)

    stamp_of = regions._Graph.next_stamp
    monkeypatch.setattr(regions, "FLOOD_SETS_MAX_SPANS", 0)  # breadth first: stamps per batch
    monkeypatch.setattr(regions._Graph, "__init__", near_limit)
    monkeypatch.setattr(regions._Graph, "next_stamp", next_stamp)
    reg, max_regions = build_regions(chf, *args)
    assert np.array_equal(reg, want_reg) and max_regions == want_max
    assert any(restarted)  # the stamps really reached the limit and started over


@pytest.mark.parametrize("seed", range(6))
def test_graph_one_way_links_are_the_same_area_links_not_returned(seed):
    """`_Graph` finds its one-way links among the layout's links not returned (kept per
    layout, so the second graph below, with other areas, reads the first one's): equal to
    testing every same-area link of the areas at hand for its link back."""
    from core import regions

    chf = _one_way_field(seed)
    rng = np.random.default_rng(seed)
    layouts = []
    for areas in (
        np.full(chf.span_count, 63, np.uint8),
        rng.choice(np.uint8([0, 5, 63]), chf.span_count),
    ):
        g = regions._Graph(dataclasses.replace(chf, area=areas))
        n, nsa = g.n, g.nsa
        src, dst = [], []
        for a in range(n):
            for d in range(4):
                b = int(nsa[a, d])
                if b != n and int(nsa[b, (d + 2) % 4]) != a:
                    src.append(a)
                    dst.append(b)
        assert g.ow_src.tolist() == src and g.ow_dst.tolist() == dst
        flag = np.zeros(n + 1, dtype=bool)
        flag[src] = flag[dst] = True
        assert np.array_equal(g.one_way, flag)
        assert src  # the field has one-way links of each kind of areas
        layouts.append(g.nbx)
    assert layouts[0] is layouts[1] and not layouts[0].flags.writeable


@pytest.mark.parametrize("seed", range(4))
def test_diagonals_made_per_call_equal_the_table(seed, monkeypatch):
    """Large fields make Recast's diagonals for the spans asked (`_Graph.diag_of` without a
    table): the same diagonals, and the same regions, as the table small fields keep."""
    from core import regions

    chf = _one_way_field(seed)
    _, dist, max_distance = build_distance_field(chf)
    spans = np.random.default_rng(seed).integers(0, chf.span_count, 200)
    kept = regions._Graph(chf)
    with_table = build_regions(chf, dist, max_distance, 4, 10)
    monkeypatch.setattr(regions, "DIAG_TABLE_MAX_SPANS", 0)
    made = regions._Graph(chf)
    assert kept._diag_rows is not None and made._diag_rows is None
    want = kept.diag_of(spans)
    assert np.array_equal(made.diag_of(spans), want)
    assert np.array_equal(made.diag_of(spans, made.nsa_of(spans)), want)
    got = build_regions(chf, dist, max_distance, 4, 10)
    np.testing.assert_array_equal(got[0], with_table[0])
    assert got[1] == with_table[1]
    reg_raw, rid = slow_watershed(chf, dist, max_distance)
    np.testing.assert_array_equal(got[0], slow_merge_and_filter(chf, reg_raw, rid, 4, 10)[0])


# The watershed's level sorts from bands sorted once (_LevelBands) against Recast's
# sortCellsByLevel over every free span at every sort


def _level_sorts(monkeypatch) -> list[int]:
    """A list that gains the number of level sorts of every watershed run from now on."""
    from core import regions

    sorts: list[int] = []
    watershed = regions._watershed

    def counted(g, dist, max_distance, *args, **kwargs):
        levels = ((int(max_distance) + 1) & ~1) // 2
        sorts.append(-(-levels // regions._NB_STACKS))
        return watershed(g, dist, max_distance, *args, **kwargs)

    monkeypatch.setattr(regions, "_watershed", counted)
    return sorts


def _regions_both_sorts(monkeypatch, run):
    from core import regions

    fast = run()
    monkeypatch.setattr(regions, "SORT_BY_BANDS", False)
    slow = run()
    monkeypatch.setattr(regions, "SORT_BY_BANDS", True)
    return fast, slow


@pytest.mark.parametrize("mesh", ["dungeon", "nav_test", "undulating", "house"])
@pytest.mark.parametrize("border", [0, 3])
def test_level_sorts_from_bands_equal_sorting_every_free_span(mesh, border, monkeypatch):
    from core import pipeline
    from core.config import NavConfig
    from core.objio import read_obj

    from .refdata import mesh_path

    verts, tris = read_obj(mesh_path(mesh))
    result = pipeline.bake(verts, tris, NavConfig(agent_radius=0.3))
    d = result.config.derived()
    chf = result.compact
    sorts = _level_sorts(monkeypatch)

    def run():
        return build_regions(
            chf, chf.dist, int(chf.max_distance), d.min_region_area, d.merge_region_area, border
        )

    fast, slow = _regions_both_sorts(monkeypatch, run)
    np.testing.assert_array_equal(fast[0], slow[0])
    assert fast[1] == slow[1] and fast[1] > 0
    assert max(sorts) >= 2  # later sorts read the last one's leftovers


@pytest.mark.parametrize("mesh", ["dungeon", "nav_test"])
def test_level_sorts_from_bands_equal_sorting_every_free_span_together(mesh, monkeypatch):
    """The union watershed of three agents' fields (eroded by 1, 2 and 4 cells; each leaves
    the stacks on its own last level) with bands sorted once gives what it gives sorting
    every free span each time."""
    from core import area, pipeline, regions
    from core.config import NavConfig
    from core.objio import read_obj

    from .refdata import mesh_path

    verts, tris = read_obj(mesh_path(mesh))
    chf = pipeline.bake(verts, tris, NavConfig(agent_radius=0.3)).compact
    erosion = area.erosion_distance(chf)
    chfs = [
        dataclasses.replace(chf, area=area.erode_by_distance(chf.area, erosion, radius))
        for radius in (1, 2, 4)
    ]
    fields = [build_distance_field(c) for c in chfs]
    dists, maxima = [f[1] for f in fields], [f[2] for f in fields]
    calls = _count_watersheds(monkeypatch)
    sorts = _level_sorts(monkeypatch)
    fast, slow = _regions_both_sorts(
        monkeypatch, lambda: regions.build_regions_together(chfs, dists, maxima, 8, 20)
    )
    assert len(calls) == 2  # one union watershed each way
    assert max(sorts) >= 2
    for (reg, top), (want, want_top) in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(reg, want)
        assert top == want_top
