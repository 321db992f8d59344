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
