"""Detour's A* (``findPath``) on precomputed float32 tables: the fast engine of `find_path`.

Every A* cost in Detour is a float32 sum of distances between fixed points: a node's position is
the mid point of the portal it was first reached through (Detour never moves it), so the step
cost from a node to a neighbour is ``dtVdist(mid[in_link], mid[out_link]) * area_cost`` with
both links known in advance. `SearchTables` computes all those distances once per navmesh
(vectorized float32, Detour's operation order); the search itself then only adds float32
numbers, done in Python floats rounded to float32 after every operation (float32 + on
float32 inputs is exact in double and one rounding gives C's result). Node pool (its limit,
(ref, side) keys) and the binary heap follow DetourNode.cpp exactly, so ties break as in Detour.
"""

from __future__ import annotations

from array import array

import numpy as np

from .navmesh import SIDE_INTERNAL, NavMesh

F32 = np.float32
H_SCALE = F32(0.999)
SUCCESS = 0x40000000
FAILURE = 0x80000000
INVALID_PARAM = 0x08
BUFFER_TOO_SMALL = 0x10
OUT_OF_NODES = 0x20
PARTIAL_RESULT = 0x40

_buf = array("f", [0.0])


def r32(x: float) -> float:
    """Round a Python float to the nearest float32 (C's (float) conversion)."""
    _buf[0] = x
    return _buf[0]


def _vdist_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = (b - a).astype(F32)
    return np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])


def first_link_mids(nav: NavMesh) -> np.ndarray:
    """float32 (nlinks, 3): per link, the portal mid point getEdgeMidPoint returns for its
    (owner, target) pair (the owner's first link towards that target, as getPortalPoints
    finds it). Cached on the navmesh."""
    cached = getattr(nav, "_first_mid_cache", None)
    if cached is not None and cached[0] is nav.link_start:
        return cached[1]
    nl = nav.link_ref.shape[0]
    if nl == 0:
        mid = np.zeros((0, 3), F32)
    else:
        key = nav.link_owner * max(1, nav.poly_count) + nav.link_ref
        order = np.lexsort((np.arange(nl), key))
        sorted_key = key[order]
        first_of_group = np.r_[True, sorted_key[1:] != sorted_key[:-1]]
        group_first = order[first_of_group]
        group_id = np.cumsum(first_of_group) - 1
        first = np.empty(nl, dtype=np.int64)
        first[order] = group_first[group_id]
        mid = nav.link_mid[first]
    nav._first_mid_cache = (nav.link_start, mid)  # type: ignore[attr-defined]
    return mid


class SearchTables:
    """Per-navmesh tables for the A* engine (Detour's frame, float32 values as Python floats).

    mid: (nlinks, 3) float32, the mid point getEdgeMidPoint gives for link k (the first link
    of its polygon towards the same neighbour, as getPortalPoints finds it);
    pair_start[k] .. + degree(target(k)): step distances from mid[k] to the mid points of the
    target polygon's links, in its link order.
    """

    def __init__(self, nav: NavMesh):
        self.nav = nav
        nl = nav.link_ref.shape[0]
        self.mid = first_link_mids(nav)
        target = nav.link_ref
        deg = np.diff(nav.link_start)
        tdeg = deg[target] if nl else np.zeros(0, np.int64)
        self.pair_start = (np.cumsum(tdeg) - tdeg).astype(np.int64)
        rep = np.repeat(np.arange(nl), tdeg)
        from .navdata import _ranges

        out = _ranges(nav.link_start[target], tdeg)
        self.pair_dist = _vdist_rows(self.mid[rep], self.mid[out]).astype(F32)
        self.pair_out = out
        # Python lists for the search loop.
        self.link_start_l = nav.link_start.tolist()
        self.link_ref_l = nav.link_ref.tolist()
        side = nav.link_side
        self.link_state_l = np.where(side != SIDE_INTERNAL, side >> 1, 0).tolist()
        self.pair_start_l = self.pair_start.tolist()
        self._cost_cache: dict[bytes, list] = {}

    def pair_costs(self, area_cost: np.ndarray) -> list:
        """Step costs pair_dist * area_cost[area of the polygon walked], as Python floats."""
        key = np.asarray(area_cost, F32).tobytes()
        got = self._cost_cache.get(key)
        if got is None:
            nav = self.nav
            area = nav.poly_area[nav.link_ref] if nav.link_ref.shape[0] else np.zeros(0, int)
            tdeg = np.diff(nav.link_start)[nav.link_ref]
            walk = np.repeat(np.asarray(area_cost, F32)[area], tdeg)
            got = (self.pair_dist * walk).astype(F32).tolist()
            self._cost_cache[key] = got
        return got


def find_path(
    tables: SearchTables,
    start_ref: int,
    end_ref: int,
    start_pos: np.ndarray,
    end_pos: np.ndarray,
    pass_ok: list,
    area_cost: np.ndarray,
    max_nodes: int,
    max_path: int,
):
    """Detour's findPath (valid refs and finite Y-up positions already checked) ->
    (status, refs list). pass_ok: per polygon, the filter's verdict (list of bool)."""
    if start_ref == end_ref:
        return SUCCESS, [start_ref]
    nav = tables.nav
    ls, lref, lstate = tables.link_start_l, tables.link_ref_l, tables.link_state_l
    pstart = tables.pair_start_l
    pcost = tables.pair_costs(area_cost)
    # Per query: distances from every link mid point to the end (vectorized float32).
    d_end = _vdist_rows(tables.mid, np.broadcast_to(end_pos, tables.mid.shape))
    h_all = (d_end * H_SCALE).astype(F32).tolist()
    end_area_cost = F32(area_cost[int(nav.poly_area[end_ref])])
    end_cost_all = None  # computed on first use
    # Start node: its position is start_pos.
    s0, s1 = ls[start_ref], ls[start_ref + 1]
    start_steps = (
        (
            _vdist_rows(np.broadcast_to(start_pos, (s1 - s0, 3)), tables.mid[s0:s1])
            * F32(area_cost[int(nav.poly_area[start_ref])])
        )
        .astype(F32)
        .tolist()
    )

    # Node pool (dtNodePool): parallel lists; key (ref, state) -> index.
    index: dict = {(start_ref, 0): 0}
    n_ref = [start_ref]
    n_pidx = [0]
    n_cost = [0.0]
    d = end_pos.astype(F32) - start_pos.astype(F32)
    start_total = F32(np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])) * H_SCALE
    n_total = [float(start_total)]
    start_heuristic = float(start_total)
    n_flags = [1]
    n_in = [-1]  # the link that created the node (-1: start, at start_pos)
    heap = [0]
    size = 1
    last_best = 0
    last_best_cost = n_total[0]
    out_of_nodes = False
    while size:
        # pop (trickleDown then bubbleUp, DetourNode.cpp)
        best = heap[0]
        size -= 1
        node = heap[size]
        i = 0
        child = 1
        while child < size:
            if child + 1 < size and n_total[heap[child]] > n_total[heap[child + 1]]:
                child += 1
            heap[i] = heap[child]
            i = child
            child = i * 2 + 1
        t = n_total[node]
        while i > 0:
            parent = (i - 1) // 2
            if n_total[heap[parent]] > t:
                heap[i] = heap[parent]
                i = parent
            else:
                break
        heap[i] = node
        n_flags[best] = (n_flags[best] & ~1) | 2
        best_ref = n_ref[best]
        if best_ref == end_ref:
            last_best = best
            break
        parent_ref = n_ref[n_pidx[best] - 1] if n_pidx[best] else -1
        b_cost = n_cost[best]
        k_in = n_in[best]
        lo, hi = ls[best_ref], ls[best_ref + 1]
        base = pstart[k_in] if k_in >= 0 else 0
        for k in range(lo, hi):
            nref = lref[k]
            if nref == parent_ref or not pass_ok[nref]:
                continue
            key = (nref, lstate[k])
            nb = index.get(key)
            if nb is None:
                if len(n_ref) >= max_nodes:
                    out_of_nodes = True
                    continue
                nb = len(n_ref)
                index[key] = nb
                n_ref.append(nref)
                n_pidx.append(0)
                n_cost.append(0.0)
                n_total.append(0.0)
                n_flags.append(0)
                n_in.append(k)
            # Step cost from the best node's position to this node's position. A node keeps
            # the position of its creating link: n_in[nb].
            kk = n_in[nb]
            if kk < 0:
                # The start node again (a neighbour, not its parent, leads back): it stays at
                # start_pos, as Detour's does (link -1 read the mesh's last link there: a lower
                # total re-parented the start, and the walk back along the path never ended).
                cur = _start_cost(tables, start_pos, k_in, area_cost, nav, best_ref)
            elif k_in >= 0:
                cur = _pair_cost(tables, pcost, k_in, base, kk, lo, nav, area_cost, best_ref)
            else:
                cur = (
                    start_steps[kk - lo]
                    if lo <= kk < hi
                    else _start_cost(tables, start_pos, kk, area_cost, nav, best_ref)
                )
            if kk < 0:  # closed, and never lower with costs >= 0: skipped below, as Detour
                cost = r32(b_cost + cur)
                heuristic = start_heuristic
            elif nref == end_ref:
                if end_cost_all is None:
                    end_cost_all = (d_end * end_area_cost).astype(F32).tolist()
                cost = r32(r32(b_cost + cur) + end_cost_all[kk])
                heuristic = 0.0
            else:
                cost = r32(b_cost + cur)
                heuristic = h_all[kk]
            total = r32(cost + heuristic)
            fl = n_flags[nb]
            if fl & 1 and total >= n_total[nb]:
                continue
            if fl & 2 and total >= n_total[nb]:
                continue
            n_pidx[nb] = best + 1
            fl &= ~2
            n_cost[nb] = cost
            n_total[nb] = total
            if fl & 1:
                n_flags[nb] = fl
                # modify: find it in the heap, bubble up
                i = heap.index(nb, 0, size)
            else:
                n_flags[nb] = fl | 1
                size += 1
                if len(heap) < size:
                    heap.append(nb)
                i = size - 1
            while i > 0:
                parent = (i - 1) // 2
                if n_total[heap[parent]] > total:
                    heap[i] = heap[parent]
                    i = parent
                else:
                    break
            heap[i] = nb
            if heuristic < last_best_cost:
                last_best_cost = heuristic
                last_best = nb
    path = []
    node = last_best
    for _ in range(len(n_ref)):  # a walk longer than the nodes would be a cycle
        path.append(n_ref[node])
        if not n_pidx[node]:
            break
        node = n_pidx[node] - 1
    else:
        raise AssertionError("find_path: the nodes' parents form a cycle")
    path.reverse()
    status = SUCCESS
    if len(path) > max_path:
        path = path[:max_path]
        status |= BUFFER_TOO_SMALL
    if n_ref[last_best] != end_ref:
        status |= PARTIAL_RESULT
    if out_of_nodes:
        status |= OUT_OF_NODES
    return status, path


def _pair_cost(tables, pcost, k_in, base, kk, lo, nav, area_cost, best_ref) -> float:
    """Cost from mid[k_in] to mid[kk] walking best_ref: the precomputed pair when kk is one of
    best_ref's links (always, unless the node was created through another polygon's link
    towards a different portal: then computed directly)."""
    j = kk - lo
    if 0 <= j < (tables.link_start_l[best_ref + 1] - lo):
        return pcost[base + j]
    d = tables.mid[kk] - tables.mid[k_in]
    dist = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return float(dist * F32(area_cost[int(nav.poly_area[best_ref])]))


def _start_cost(tables, start_pos, kk, area_cost, nav, best_ref) -> float:
    d = tables.mid[kk] - start_pos
    dist = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return float(dist * F32(area_cost[int(nav.poly_area[best_ref])]))
