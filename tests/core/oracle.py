"""Slow, obviously-correct ports of Recast's rasterizer and filters, one triangle and one span
at a time with float32 scalars. Test oracles only: the fast code must match them exactly."""

from __future__ import annotations

import numpy as np

F = np.float32


def divide_poly(poly, offset, axis):
    """Recast's dividePoly on a list of float32 (3,) vertices."""
    delta = [F(offset - v[axis]) for v in poly]
    out1, out2 = [], []
    n = len(poly)
    for a in range(n):
        b = (a - 1) % n
        if (delta[a] >= 0) != (delta[b] >= 0):
            s = F(delta[b] / F(delta[b] - delta[a]))
            p = poly[b] + (poly[a] - poly[b]) * s
            out1.append(p)
            out2.append(p)
            if delta[a] > 0:
                out1.append(poly[a])
            elif delta[a] < 0:
                out2.append(poly[a])
        else:
            if delta[a] >= 0:
                out1.append(poly[a])
                if delta[a] != 0:
                    continue
            out2.append(poly[a])
    return out1, out2


def rasterize(verts, tris, areas, bmin, bmax, cs, ch, width, height, climb):
    """Columns as lists of [smin, smax, area], bottom-up; fragments in call order."""
    cs, ch = F(cs), F(ch)
    ics, ich = F(F(1) / cs), F(F(1) / ch)
    rc_bmin = np.asarray(bmin, dtype=F)[[0, 2, 1]]
    rc_bmax = np.asarray(bmax, dtype=F)[[0, 2, 1]]
    by = F(rc_bmax[1] - rc_bmin[1])
    columns = [[] for _ in range(width * height)]
    fragments = []
    for t, tri in enumerate(np.asarray(tris)):
        poly = [np.asarray(verts[i], dtype=F)[[0, 2, 1]] for i in (tri[0], tri[2], tri[1])]
        tmin = np.min(poly, axis=0)
        tmax = np.max(poly, axis=0)
        if not (np.all(tmin <= rc_bmax) and np.all(tmax >= rc_bmin)):
            continue
        z0 = int(np.clip(np.trunc(F((tmin[2] - rc_bmin[2]) * ics)), -1, height - 1))
        z1 = int(np.clip(np.trunc(F((tmax[2] - rc_bmin[2]) * ics)), 0, height - 1))
        rest = poly
        for z in range(z0, z1 + 1):
            row, rest = divide_poly(rest, F(F(rc_bmin[2] + F(F(z) * cs)) + cs), 2)
            if len(row) < 3 or z < 0:
                continue
            xs = [p[0] for p in row]
            x0 = int(np.trunc(F((min(xs) - rc_bmin[0]) * ics)))
            x1 = int(np.trunc(F((max(xs) - rc_bmin[0]) * ics)))
            if x1 < 0 or x0 >= width:
                continue
            x0, x1 = max(x0, -1), min(x1, width - 1)
            for x in range(x0, x1 + 1):
                cell, row = divide_poly(row, F(F(rc_bmin[0] + F(F(x) * cs)) + cs), 0)
                if len(cell) < 3 or x < 0:
                    continue
                lo = F(min(p[1] for p in cell) - rc_bmin[1])
                hi = F(max(p[1] for p in cell) - rc_bmin[1])
                if hi < 0 or lo > by:
                    continue
                lo, hi = max(lo, F(0)), min(hi, by)
                smin = int(np.clip(np.floor(F(lo * ich)), 0, 8191))
                smax = int(np.clip(np.ceil(F(hi * ich)), smin + 1, 8191))
                fragments.append((t, x, z, smin, smax, int(areas[t])))
                add_span(columns[x + z * width], smin, smax, int(areas[t]), climb)
    return columns, fragments


def add_span(column, smin, smax, area, climb):
    new = [smin, smax, area]
    kept = []
    for span in column:
        if span[0] > new[1] or span[1] < new[0]:
            kept.append(span)
            continue
        new[0] = min(new[0], span[0])
        new[1] = max(new[1], span[1])
        if abs(new[1] - span[1]) <= climb:
            new[2] = max(new[2], span[2])
    kept.append(new)
    kept.sort()
    column[:] = kept


def filters(columns, width, height, walkable_height, climb):
    """The three filters in order on list columns; returns per-stage area lists."""
    stages = {}
    for col in columns:  # low hanging
        prev_walkable, prev_area, prev_top = False, 0, None
        for span in col:
            walkable = span[2] != 0
            if not walkable and prev_walkable and span[1] - prev_top <= climb:
                span[2] = prev_area
            prev_walkable, prev_area, prev_top = walkable, span[2], span[1]
    stages["lowhang"] = [s[2] for c in columns for s in c]
    for z in range(height):  # ledges
        for x in range(width):
            col = columns[x + z * width]
            for i, span in enumerate(col):
                if span[2] == 0:
                    continue
                floor = span[1]
                ceiling = col[i + 1][0] if i + 1 < len(col) else 0xFFFF
                lowest = 0xFFFF
                lo_ok = hi_ok = floor
                for dx, dz in ((-1, 0), (0, 1), (1, 0), (0, -1)):
                    nx, nz = x + dx, z + dz
                    if not (0 <= nx < width and 0 <= nz < height):
                        lowest = -climb - 1
                        break
                    ncol = columns[nx + nz * width]
                    nceil = ncol[0][0] if ncol else 0xFFFF
                    if min(ceiling, nceil) - floor >= walkable_height:
                        lowest = -climb - 1
                        break
                    for j, ns in enumerate(ncol):
                        nfloor = ns[1]
                        nceil = ncol[j + 1][0] if j + 1 < len(ncol) else 0xFFFF
                        if min(ceiling, nceil) - max(floor, nfloor) < walkable_height:
                            continue
                        diff = nfloor - floor
                        lowest = min(lowest, diff)
                        if abs(diff) <= climb:
                            lo_ok, hi_ok = min(lo_ok, nfloor), max(hi_ok, nfloor)
                        elif diff < -climb:
                            break
                if lowest < -climb or hi_ok - lo_ok > climb:
                    span[2] = 0
    stages["ledge"] = [s[2] for c in columns for s in c]
    for col in columns:  # low height
        for i, span in enumerate(col):
            ceiling = col[i + 1][0] if i + 1 < len(col) else 0xFFFF
            if ceiling - span[1] < walkable_height:
                span[2] = 0
    stages["lowheight"] = [s[2] for c in columns for s in c]
    return stages


# --------------------------------------------------------------------------------------------
# RecastRegion.cpp: rcBuildRegionsMonotone and rcBuildLayerRegions, one span at a time.
# Every structure keeps Recast's name; ``reg`` plays srcReg (unsigned short per span).

RC_BORDER_REG = 0x8000
RC_NOT_CONNECTED = 63
RC_NULL_NEI = 0xFFFF
_DX = (-1, 0, 1, 0)
_DY = (0, 1, 0, -1)


def _con_index(chf, x, y, i, d):
    """``cells[ax + ay*w].index + rcGetCon(s, d)``, or -1 when rcGetCon is RC_NOT_CONNECTED."""
    c = int(chf.con[i, d])
    if c == RC_NOT_CONNECTED:
        return -1
    return int(chf.cell_start[(x + _DX[d]) + (y + _DY[d]) * chf.width]) + c


def _cell_spans(chf, x, y):
    c = x + y * chf.width
    return range(int(chf.cell_start[c]), int(chf.cell_start[c + 1]))


class RcRegion:
    """Recast's rcRegion."""

    def __init__(self, i):
        self.span_count = 0
        self.id = i
        self.area_type = 0
        self.remap = False
        self.visited = False
        self.overlap = False
        self.connects_to_border = False
        self.ymin = 0xFFFF
        self.ymax = 0
        self.connections = []
        self.floors = []


def paint_rect_region(minx, maxx, miny, maxy, reg_id, chf, reg):
    for y in range(miny, maxy):
        for x in range(minx, maxx):
            for i in _cell_spans(chf, x, y):
                if chf.area[i] != 0:
                    reg[i] = reg_id


def remove_adjacent_neighbours(rg):
    i = 0
    while i < len(rg.connections) and len(rg.connections) > 1:
        ni = (i + 1) % len(rg.connections)
        if rg.connections[i] == rg.connections[ni]:
            for j in range(i, len(rg.connections) - 1):
                rg.connections[j] = rg.connections[j + 1]
            rg.connections.pop()
        else:
            i += 1


def replace_neighbour(rg, old_id, new_id):
    nei_changed = False
    for i in range(len(rg.connections)):
        if rg.connections[i] == old_id:
            rg.connections[i] = new_id
            nei_changed = True
    for i in range(len(rg.floors)):
        if rg.floors[i] == old_id:
            rg.floors[i] = new_id
    if nei_changed:
        remove_adjacent_neighbours(rg)


def can_merge_with_region(rega, regb):
    if rega.area_type != regb.area_type:
        return False
    n = 0
    for c in rega.connections:
        if c == regb.id:
            n += 1
    if n > 1:
        return False
    for f in rega.floors:
        if f == regb.id:
            return False
    return True


def add_unique_floor_region(rg, n):
    for f in rg.floors:
        if f == n:
            return
    rg.floors.append(n)


def merge_regions(rega, regb):
    aid, bid = rega.id, regb.id
    acon = list(rega.connections)
    bcon = regb.connections
    insa = -1
    for i in range(len(acon)):
        if acon[i] == bid:
            insa = i
            break
    if insa == -1:
        return False
    insb = -1
    for i in range(len(bcon)):
        if bcon[i] == aid:
            insb = i
            break
    if insb == -1:
        return False
    rega.connections = []
    ni = len(acon)
    for i in range(ni - 1):
        rega.connections.append(acon[(insa + 1 + i) % ni])
    ni = len(bcon)
    for i in range(ni - 1):
        rega.connections.append(bcon[(insb + 1 + i) % ni])
    remove_adjacent_neighbours(rega)
    for f in regb.floors:
        add_unique_floor_region(rega, f)
    rega.span_count += regb.span_count
    regb.span_count = 0
    regb.connections = []
    return True


def is_region_connected_to_border(rg):
    return any(c == 0 for c in rg.connections)


def is_solid_edge(chf, reg, x, y, i, d):
    r = 0
    ai = _con_index(chf, x, y, i, d)
    if ai != -1:
        r = reg[ai]
    return r != reg[i]


def walk_contour(x, y, i, d, chf, reg, cont):
    start_dir, start_i = d, i
    cur_reg = 0
    ai = _con_index(chf, x, y, i, d)
    if ai != -1:
        cur_reg = reg[ai]
    cont.append(cur_reg)
    it = 0
    while True:
        it += 1
        if it >= 40000:
            break
        if is_solid_edge(chf, reg, x, y, i, d):
            r = 0
            ai = _con_index(chf, x, y, i, d)
            if ai != -1:
                r = reg[ai]
            if r != cur_reg:
                cur_reg = r
                cont.append(cur_reg)
            d = (d + 1) & 3
        else:
            ni = _con_index(chf, x, y, i, d)
            if ni == -1:
                return  # "Should not happen."
            x, y, i = x + _DX[d], y + _DY[d], ni
            d = (d + 3) & 3
        if start_i == i and start_dir == d:
            break
    if len(cont) > 1:
        j = 0
        while j < len(cont):
            nj = (j + 1) % len(cont)
            if cont[j] == cont[nj]:
                for k in range(j, len(cont) - 1):
                    cont[k] = cont[k + 1]
                cont.pop()
            else:
                j += 1


def _compress_region_ids(regions, chf, reg):
    """The "Compress region Ids" and "Remap regions" tail shared by both merge functions."""
    nreg = len(regions)
    for r in regions:
        r.remap = not (r.id == 0 or (r.id & RC_BORDER_REG))
    reg_id_gen = 0
    for i in range(nreg):
        if not regions[i].remap:
            continue
        old_id = regions[i].id
        reg_id_gen += 1
        for j in range(i, nreg):
            if regions[j].id == old_id:
                regions[j].id = reg_id_gen
                regions[j].remap = False
    for i in range(chf.span_count):
        if (reg[i] & RC_BORDER_REG) == 0:
            reg[i] = regions[reg[i]].id
    return reg_id_gen


def merge_and_filter_regions(min_region_area, merge_region_size, max_region_id, chf, reg):
    """Recast's mergeAndFilterRegions; rewrites ``reg``; returns (max region id, overlaps)."""
    w, h = chf.width, chf.height
    nreg = max_region_id + 1
    regions = [RcRegion(i) for i in range(nreg)]
    for y in range(h):
        for x in range(w):
            cell = _cell_spans(chf, x, y)
            for i in cell:
                r = reg[i]
                if r == 0 or r >= nreg:
                    continue
                rg = regions[r]
                rg.span_count += 1
                for j in cell:
                    if i == j:
                        continue
                    floor_id = reg[j]
                    if floor_id == 0 or floor_id >= nreg:
                        continue
                    if floor_id == r:
                        rg.overlap = True
                    add_unique_floor_region(rg, floor_id)
                if len(rg.connections) > 0:
                    continue
                rg.area_type = int(chf.area[i])
                ndir = -1
                for d in range(4):
                    if is_solid_edge(chf, reg, x, y, i, d):
                        ndir = d
                        break
                if ndir != -1:
                    walk_contour(x, y, i, ndir, chf, reg, rg.connections)

    # Remove too small regions.
    for i in range(nreg):
        rg = regions[i]
        if rg.id == 0 or (rg.id & RC_BORDER_REG) or rg.span_count == 0 or rg.visited:
            continue
        connects_to_border = False
        span_count = 0
        stack, trace = [i], []
        rg.visited = True
        while stack:
            ri = stack.pop()
            creg = regions[ri]
            span_count += creg.span_count
            trace.append(ri)
            for c in creg.connections:
                if c & RC_BORDER_REG:
                    connects_to_border = True
                    continue
                neireg = regions[c]
                if neireg.visited or neireg.id == 0 or (neireg.id & RC_BORDER_REG):
                    continue
                stack.append(neireg.id)
                neireg.visited = True
        if span_count < min_region_area and not connects_to_border:
            for t in trace:
                regions[t].span_count = 0
                regions[t].id = 0

    # Merge too small regions to neighbour regions.
    while True:
        merge_count = 0
        for i in range(nreg):
            rg = regions[i]
            if rg.id == 0 or (rg.id & RC_BORDER_REG) or rg.overlap or rg.span_count == 0:
                continue
            if rg.span_count > merge_region_size and is_region_connected_to_border(rg):
                continue
            smallest = 0xFFFFFFF
            merge_id = rg.id
            for c in rg.connections:
                if c & RC_BORDER_REG:
                    continue
                mreg = regions[c]
                if mreg.id == 0 or (mreg.id & RC_BORDER_REG) or mreg.overlap:
                    continue
                if (
                    mreg.span_count < smallest
                    and can_merge_with_region(rg, mreg)
                    and can_merge_with_region(mreg, rg)
                ):
                    smallest = mreg.span_count
                    merge_id = mreg.id
            if merge_id != rg.id:
                old_id = rg.id
                target = regions[merge_id]
                if merge_regions(target, rg):
                    for other in regions:
                        if other.id == 0 or (other.id & RC_BORDER_REG):
                            continue
                        if other.id == old_id:
                            other.id = merge_id
                        replace_neighbour(other, old_id, merge_id)
                    merge_count += 1
        if merge_count == 0:
            break

    max_region_id = _compress_region_ids(regions, chf, reg)
    overlaps = [r.id for r in regions if r.overlap]
    return max_region_id, overlaps


def add_unique_connection(rg, n):
    for c in rg.connections:
        if c == n:
            return
    rg.connections.append(n)


def merge_and_filter_layer_regions(min_region_area, max_region_id, chf, reg):
    """Recast's mergeAndFilterLayerRegions; rewrites ``reg``; returns the max region id."""
    w, h = chf.width, chf.height
    nreg = max_region_id + 1
    regions = [RcRegion(i) for i in range(nreg)]
    for y in range(h):
        for x in range(w):
            lregs = []
            for i in _cell_spans(chf, x, y):
                ri = reg[i]
                if ri == 0 or ri >= nreg:
                    continue
                rg = regions[ri]
                rg.span_count += 1
                rg.area_type = int(chf.area[i])
                rg.ymin = min(rg.ymin, int(chf.y[i]))
                rg.ymax = max(rg.ymax, int(chf.y[i]))
                lregs.append(ri)
                for d in range(4):
                    ai = _con_index(chf, x, y, i, d)
                    if ai != -1:
                        rai = reg[ai]
                        if 0 < rai < nreg and rai != ri:
                            add_unique_connection(rg, rai)
                        if rai & RC_BORDER_REG:
                            rg.connects_to_border = True
            for a in range(len(lregs) - 1):
                for b in range(a + 1, len(lregs)):
                    if lregs[a] != lregs[b]:
                        add_unique_floor_region(regions[lregs[a]], lregs[b])
                        add_unique_floor_region(regions[lregs[b]], lregs[a])

    # Create 2D layers from regions.
    layer_id = 1
    for r in regions:
        r.id = 0
    for i in range(1, nreg):
        root = regions[i]
        if root.id != 0:
            continue
        root.id = layer_id
        stack = [i]
        while stack:
            rg = regions[stack.pop(0)]  # pop front
            for nei in rg.connections:
                regn = regions[nei]
                if regn.id != 0:
                    continue
                if rg.area_type != regn.area_type:
                    continue
                if any(f == nei for f in root.floors):
                    continue
                stack.append(nei)
                regn.id = layer_id
                for f in regn.floors:
                    add_unique_floor_region(root, f)
                root.ymin = min(root.ymin, regn.ymin)
                root.ymax = max(root.ymax, regn.ymax)
                root.span_count += regn.span_count
                regn.span_count = 0
                root.connects_to_border = root.connects_to_border or regn.connects_to_border
        layer_id += 1

    # Remove small regions.
    for i in range(nreg):
        r = regions[i]
        if 0 < r.span_count < min_region_area and not r.connects_to_border:
            dead = r.id
            for other in regions:
                if other.id == dead:
                    other.id = 0

    return _compress_region_ids(regions, chf, reg)


def _sweep_regions(chf, border_size):
    """The common head of rcBuildRegionsMonotone and rcBuildLayerRegions: border strips, then
    the row sweep. Returns (srcReg list, id) where id is the next free region id."""
    w, h = chf.width, chf.height
    rid_next = 1  # Recast's ``id``
    reg = [0] * chf.span_count
    if border_size > 0:
        bw, bh = min(w, border_size), min(h, border_size)
        for x0, x1, y0, y1 in ((0, bw, 0, h), (w - bw, w, 0, h), (0, w, 0, bh), (0, w, h - bh, h)):
            paint_rect_region(x0, x1, y0, y1, rid_next | RC_BORDER_REG, chf, reg)
            rid_next += 1
    sweeps = {}  # rcSweepSpan per row id: [rid, id, ns, nei]
    for y in range(border_size, h - border_size):
        prev = [0] * (rid_next + 1)
        rid = 1
        for x in range(border_size, w - border_size):
            for i in _cell_spans(chf, x, y):
                if chf.area[i] == 0:
                    continue
                previd = 0
                ai = _con_index(chf, x, y, i, 0)
                if ai != -1 and (reg[ai] & RC_BORDER_REG) == 0 and chf.area[i] == chf.area[ai]:
                    previd = reg[ai]
                if not previd:
                    previd = rid
                    rid += 1
                    sweeps[previd] = {"rid": previd, "id": 0, "ns": 0, "nei": 0}
                ai = _con_index(chf, x, y, i, 3)
                if ai != -1:
                    if reg[ai] and (reg[ai] & RC_BORDER_REG) == 0 and chf.area[i] == chf.area[ai]:
                        nr = reg[ai]
                        sw = sweeps[previd]
                        if not sw["nei"] or sw["nei"] == nr:
                            sw["nei"] = nr
                            sw["ns"] += 1
                            prev[nr] += 1
                        else:
                            sw["nei"] = RC_NULL_NEI
                reg[i] = previd
        for i in range(1, rid):
            sw = sweeps[i]
            if sw["nei"] != RC_NULL_NEI and sw["nei"] != 0 and prev[sw["nei"]] == sw["ns"]:
                sw["id"] = sw["nei"]
            else:
                sw["id"] = rid_next
                rid_next += 1
                assert rid_next <= 0xFFFF, "Recast's unsigned short id would wrap"
        for x in range(border_size, w - border_size):
            for i in _cell_spans(chf, x, y):
                if 0 < reg[i] < rid:
                    reg[i] = sweeps[reg[i]]["id"]
    return reg, rid_next


def build_regions_monotone(chf, border_size, min_region_area, merge_region_area):
    """Recast's rcBuildRegionsMonotone: (reg list per span, maxRegions, overlaps)."""
    reg, rid_next = _sweep_regions(chf, border_size)
    max_regions, overlaps = merge_and_filter_regions(
        min_region_area, merge_region_area, rid_next, chf, reg
    )
    return reg, max_regions, overlaps


def build_layer_regions(chf, border_size, min_region_area):
    """Recast's rcBuildLayerRegions: (reg list per span, maxRegions)."""
    reg, rid_next = _sweep_regions(chf, border_size)
    max_regions = merge_and_filter_layer_regions(min_region_area, rid_next, chf, reg)
    return reg, max_regions


def read_obj_lines(path):
    """The OBJ reader one line at a time (the oracle for ``core.objio.read_obj``).

    Returns the file's own coordinates (Y-up, not rotated) as float32 (n, 3) and the fan
    triangles (f0, f[i-1], f[i]) as int32 (m, 3), 0-based. A UTF-8 BOM is dropped; lines are
    split on ASCII blanks; a token starting with '#' ends the line; negative indices count back
    from the last vertex defined so far. Only for valid files (no error checks).
    """
    data = open(path, "rb").read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    verts: list[list] = []
    tris: list[tuple[int, int, int]] = []
    for raw in data.split(b"\n"):
        tokens = raw.split()
        for i, token in enumerate(tokens):
            if token.startswith(b"#"):
                tokens = tokens[:i]
                break
        if not tokens:
            continue
        if tokens[0] == b"v":
            verts.append([np.float32(float(t)) for t in tokens[1:4]])
        elif tokens[0] == b"f":
            face = []
            for token in tokens[1:]:
                index = int(token.split(b"/")[0])
                face.append(index - 1 if index > 0 else index + len(verts))
            for i in range(2, len(face)):
                tris.append((face[0], face[i - 1], face[i]))
    return np.array(verts, np.float32).reshape(-1, 3), np.array(tris, np.int32).reshape(-1, 3)


# ----------------------------------------------------------------------------------------------
# Voxel path finding (core/nav/voxel_path.py): the seed's rule voxel by voxel, and a queue BFS


def stayable_voxels(occupied, clearance=1):
    """The seed's rule on a dense bool grid [iy, ix, iz], padded by one free voxel around and
    ``clearance`` on top, one voxel at a time. Returns a dict {(ix, iy, iz): True} of
    stayable voxels (ix, iy in -1 .. size, iz in 0 .. depth)."""
    h, w, d = occupied.shape

    def solid(x, y, z):
        return 0 <= x < w and 0 <= y < h and 0 <= z < d and bool(occupied[y, x, z])

    out = {}
    for y in range(-1, h + 1):
        for x in range(-1, w + 1):
            for z in range(0, d + 1):  # nothing above z = d has anything to hold on to
                if any(solid(x, y, z + k) for k in range(clearance)):
                    continue
                sides = ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1))
                if (
                    solid(x, y, z - 1)
                    or any(solid(a, b, z) for a, b in sides)
                    or any(solid(a, b, z - 1) for a, b in sides)
                ):
                    out[(x, y, z)] = True
    return out


def queue_bfs(stayable, start, goal):
    """Steps of a shortest 6-neighbour path between two stayable voxels (None: unreachable)."""
    from collections import deque

    dist = {start: 0}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        if v == goal:
            return dist[v]
        x, y, z = v
        for n in ((x - 1, y, z), (x + 1, y, z), (x, y - 1, z), (x, y + 1, z), (x, y, z - 1),
                  (x, y, z + 1)):  # fmt: skip
            if n in stayable and n not in dist:
                dist[n] = dist[v] + 1
                queue.append(n)
    return None


def detour_bv_tree(item_bmin, item_bmax):
    """Detour's createBVTree/subdivide, recursive and item by item (sort: glibc's stable
    merge-sort qsort). item_bmin/item_bmax: uint16 (n, 3). Returns (bmin list, bmax list,
    i list) of the 2n - 1 nodes in depth-first order."""
    items = [
        (tuple(int(v) for v in lo), tuple(int(v) for v in hi), i)
        for i, (lo, hi) in enumerate(zip(item_bmin, item_bmax, strict=True))
    ]
    nodes: list = []

    def subdivide(imin, imax):
        index = len(nodes)
        nodes.append(None)
        if imax - imin == 1:
            lo, hi, i = items[imin]
            nodes[index] = (lo, hi, i)
            return
        lo = [min(items[k][0][a] for k in range(imin, imax)) for a in range(3)]
        hi = [max(items[k][1][a] for k in range(imin, imax)) for a in range(3)]
        x, y, z = hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]
        axis, best = 0, x
        if y > best:
            axis, best = 1, y
        if z > best:
            axis = 2
        items[imin:imax] = sorted(items[imin:imax], key=lambda it: it[0][axis])
        split = imin + (imax - imin) // 2
        subdivide(imin, split)
        subdivide(split, imax)
        nodes[index] = (tuple(lo), tuple(hi), -(len(nodes) - index))

    subdivide(0, len(items))
    return [n[0] for n in nodes], [n[1] for n in nodes], [n[2] for n in nodes]


def flood_polys_slow(polys, nvp, seeds):
    """Island pruning's oracle: a literal breadth-first flood over a polygon mesh's neighbour
    links (a Python deque, one polygon at a time). polys uint16 (npolys, 2*nvp); a neighbour
    0xFFFF is none and one with bit 0x8000 a portal. Returns the set of reached polygon ids."""
    from collections import deque

    npolys = len(polys)
    reached = set()
    queue = deque()
    for s in seeds:
        if 0 <= s < npolys and s not in reached:
            reached.add(int(s))
            queue.append(int(s))
    while queue:
        p = queue.popleft()
        for k in range(nvp):
            n = int(polys[p][nvp + k])
            if n & 0x8000 or n >= npolys:
                continue
            if n not in reached:
                reached.add(n)
                queue.append(n)
    return reached


def auto_links_slow(pmesh, detail, chf, hf, *, agent_height, agent_radius, agent_climb,
                    max_drop, max_jump_distance, spacing):  # fmt: skip
    """core.jumplinks.find_auto_links, literally: one edge, sample, probe and arc step at a
    time (the Detour connection check reuses core.jumplinks.connects_on, the Detour port).
    Returns a list of (start (3,), end (3,), bidirectional) in the fast version's order."""
    import itertools
    import math

    from core.jumplinks import NEXT_LANDINGS, STEP_CELLS, _arc, _own_navmesh, connects_on

    cs, ch = float(chf.cs), float(chf.ch)
    radius = max(float(agent_radius), cs)
    nvp = pmesh.nvp
    world = pmesh.world_verts().astype(np.float64)

    def column(x, y, bmin, width, height):
        ix, iy = math.floor((x - float(bmin[0])) / cs), math.floor((y - float(bmin[1])) / cs)
        return ix + iy * width if 0 <= ix < width and 0 <= iy < height else -1

    def region(s):
        reg = int(chf.reg[s])
        return reg != 0 and not reg & 0x8000

    cands = []
    for p in range(pmesh.npolys):
        ids = [int(v) for v in pmesh.polys[p, :nvp] if v != 0xFFFF]
        centroid = np.mean([world[v][:2] for v in ids], axis=0)
        for k in range(len(ids)):
            if int(pmesh.polys[p, nvp + k]) != 0xFFFF:
                continue
            a, b = world[ids[k]], world[ids[(k + 1) % len(ids)]]
            dx, dy = b[0] - a[0], b[1] - a[1]
            length = math.hypot(dx, dy)
            if length == 0:
                continue
            n = np.array([dy, -dx]) / length
            if np.dot((a[:2] + b[:2]) / 2 - centroid, n) < 0:
                n = -n
            count = max(1, math.floor(length / spacing + 1e-9))
            for i in range(count):
                t = (i + 0.5) / count
                pt = a + (b - a) * t
                inx, iny = pt[:2] - n * (0.25 * cs)
                c = column(inx, iny, chf.bmin, chf.width, chf.height)
                best = None
                if c >= 0:
                    for s in range(int(chf.cell_start[c]), int(chf.cell_start[c + 1])):
                        z = float(chf.bmin[2]) + float(chf.y[s]) * ch
                        d = abs(z - pt[2])
                        if region(s) and d <= agent_climb + ch + 1e-6:
                            if best is None or d < best[0]:
                                best = (d, z)
                if best is None:
                    continue
                z0 = best[1]
                seen_gap = False
                step = STEP_CELLS * cs
                ends = []  # the first landing, then the next ones out (tried when blocked)
                for k2 in range(1, max(1, math.floor(max_jump_distance / step + 1e-9)) + 1):
                    d = step * k2
                    x, y = pt[0] + n[0] * d, pt[1] + n[1] * d
                    hc = column(x, y, hf.bmin, hf.width, hf.height)
                    ground = False
                    land = None
                    if hc >= 0:
                        for s in range(int(hf.col_start[hc]), int(hf.col_start[hc + 1])):
                            top = float(hf.bmin[2]) + float(hf.smax[s]) * ch
                            ground |= abs(top - z0) <= agent_climb + 1e-6
                        for s in range(int(chf.cell_start[hc]), int(chf.cell_start[hc + 1])):
                            z = float(chf.bmin[2]) + float(chf.y[s]) * ch
                            if region(s) and z0 - max_drop - 1e-6 <= z <= z0 + agent_climb + 1e-6:
                                land = z if land is None else max(land, z)
                    if land is not None and seen_gap:
                        ends.append(np.array([x, y, land]))
                        if len(ends) == 1 + NEXT_LANDINGS:
                            break
                    seen_gap |= not ground
                if ends:
                    cands.append((np.array([pt[0], pt[1], z0]), ends))
    if not cands:
        return []
    step = STEP_CELLS * cs

    def blocked_arcs(pairs) -> list[bool]:
        """Each (start, end) arc's clearance, one step and one span at a time; each arc at
        its own steps (its horizontal length over the step, + 1), and between two steps the
        columns of both and the two beside a corner the line crosses."""
        out = []
        for start, end in pairs:
            h = math.hypot(end[0] - start[0], end[1] - start[1])
            nsteps = max(2, math.ceil(h / step) + 1)
            t = np.linspace(0.0, 1.0, nsteps + 1)
            arc = _arc(start[None], end[None], t)[0]
            across = np.array([start[1] - end[1], end[0] - start[0]]) / max(h, 1e-12)
            blocked = False
            for i, side in itertools.product(range(nsteps), (0.0, -1.0, 1.0)):
                p, q = arc[i], arc[i + 1]
                lo = (min(p[2], q[2]) - float(hf.bmin[2])) / ch + (1.0 - 1e-6)
                hi = (max(p[2], q[2]) + agent_height - float(hf.bmin[2])) / ch
                off = side * agent_radius * across
                px, py, qx, qy = p[0] + off[0], p[1] + off[1], q[0] + off[0], q[1] + off[1]
                for x, y in ((px, py), (qx, qy), (qx, py), (px, qy)):
                    c = column(x, y, hf.bmin, hf.width, hf.height)
                    if c < 0:
                        continue
                    for s in range(int(hf.col_start[c]), int(hf.col_start[c + 1])):
                        if float(hf.smin[s]) < hi and float(hf.smax[s]) > lo:
                            blocked = True
            out.append(blocked)
        return out

    # The first landings together; then, round by round, the next landing of each sample
    # still blocked.
    chosen = [ends[0] for _start, ends in cands]
    blocked = blocked_arcs([(start, ends[0]) for start, ends in cands])
    for k in range(1, 1 + NEXT_LANDINGS):
        retry = [
            i
            for i, (b, (_s, ends)) in enumerate(zip(blocked, cands, strict=True))
            if b and len(ends) > k
        ]
        if not retry:
            continue
        again = blocked_arcs([(cands[i][0], cands[i][1][k]) for i in retry])
        for i, b in zip(retry, again, strict=True):
            if not b:
                chosen[i], blocked[i] = cands[i][1][k], False
    clear_links = [
        (start, end, not end[2] < start[2] - agent_climb - 1e-6)
        for (start, _ends), end, b in zip(cands, chosen, blocked, strict=True)
        if not b
    ]
    if not clear_links:
        return []
    starts = np.array([s for s, _e, _b in clear_links])
    ends = np.array([e for _s, e, _b in clear_links])
    nav = _own_navmesh(pmesh, detail, agent_height, agent_radius, agent_climb)
    ok = connects_on(nav, starts, radius, agent_climb) & connects_on(nav, ends, radius, agent_climb)
    links = [link for link, good in zip(clear_links, ok, strict=True) if good]
    out = []
    for i, (s, e, b) in enumerate(links):
        if any(
            b2 == b
            and np.linalg.norm(s - s2) < spacing
            and np.linalg.norm(e - e2) < spacing
            and float(np.dot((e - s)[:2], (e2 - s2)[:2])) > 0  # the same direction
            for s2, e2, b2 in links[:i]
        ):
            continue
        out.append((s, e, b))
    return out
