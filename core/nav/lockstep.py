"""Detour's graph searches run in lockstep across many queries: ``findPath`` (A*) and
``findDistanceToWall`` (Dijkstra), vectorized with NumPy.

findPath (`find_paths`): every query keeps its node state densely per node key ((polygon,
crossed side) as dtNodePool's keys, with the pool's size limit counted in Detour's allocation
order) and an unordered open list (a column of a 2D array). One round pops the open node of
least total of every live query (a column-wise min) and relaxes all its links at once (flat
arrays over (query, link) candidates). Where the least total is unique this is exactly the node
Detour's binary heap pops; a query that meets two open nodes of equal least total is answered
again by an engine that keeps dtNodeQueue's layout (`_find_paths_chunk`: heaps as rows of 2D
arrays, the same sift-up and trickle-down moves, looping over heap levels, never over queries;
or `core.nav.search` one by one when few), so ties break as in Detour. Costs are float32 in
Detour's order, so every answer equals the literal port's (`core.nav.query`), including ties
and out-of-nodes cut-offs.

findDistanceToWall (`find_distance_to_wall`) runs on the heap engine directly.

Positions are Detour's Y-up frame; refs are NavMesh refs.
"""

from __future__ import annotations

import numpy as np

from .batch import gatherable
from .navdata import EXT_LINK, POLYTYPE_OFFMESH_CONNECTION, _ranges
from .navmesh import SIDE_INTERNAL, NavMesh

F32 = np.float32
_ZERO = F32(0)
_ONE = F32(1)
H_SCALE = F32(0.999)
SUCCESS = 0x40000000
FAILURE = 0x80000000
INVALID_PARAM = 0x08
BUFFER_TOO_SMALL = 0x10
OUT_OF_NODES = 0x20
PARTIAL_RESULT = 0x40
#: Queries per chunk are chosen so a chunk's node map stays below this many entries.
MAP_BUDGET = 1 << 23


def _dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """dtVdist(a, b) row-wise, float32."""
    d = (b - a).astype(F32)
    return np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])


class _Pools:
    """Node pools and heaps of `nq` queries (rows)."""

    def __init__(self, nq: int, keys: int, cap: int):
        self.node_of = np.full((nq, keys), -1, dtype=np.int32)
        self.ref = np.zeros((nq, cap), dtype=np.int64)
        self.pidx = np.zeros((nq, cap), dtype=np.int32)
        self.cost = np.zeros((nq, cap), dtype=F32)
        self.total = np.zeros((nq, cap), dtype=F32)
        self.flags = np.zeros((nq, cap), dtype=np.int8)
        self.came = np.full((nq, cap), -1, dtype=np.int64)  # link that created the node
        self.count = np.zeros(nq, dtype=np.int64)
        self.heap = np.zeros((nq, cap), dtype=np.int32)
        self.size = np.zeros(nq, dtype=np.int64)
        self.cap, self.keys = cap, keys
        # Flat views: row r, column c is element r * cap + c (1-D gathers are cheaper).
        self.node_of_f = self.node_of.reshape(-1)
        self.ref_f = self.ref.reshape(-1)
        self.pidx_f = self.pidx.reshape(-1)
        self.cost_f = self.cost.reshape(-1)
        self.total_f = self.total.reshape(-1)
        self.flags_f = self.flags.reshape(-1)
        self.came_f = self.came.reshape(-1)
        self.heap_f = self.heap.reshape(-1)

    def bubble_up(self, rows, i, node) -> None:
        """dtNodeQueue::bubbleUp of `node` from slot i, for each row."""
        heap, total, cap = self.heap_f, self.total_f, self.cap
        base = rows * cap
        t = total[base + node]
        i = i.copy()
        live = np.arange(rows.shape[0])
        while live.shape[0]:
            b = base[live]
            parent = (i[live] - 1) // 2
            move = (i[live] > 0) & (total[b + heap[b + np.maximum(parent, 0)]] > t[live])
            live = live[move]
            if not live.shape[0]:
                break
            b = b[move]
            parent = parent[move]
            heap[b + i[live]] = heap[b + parent]
            i[live] = parent
        heap[base + i] = node

    def pop(self, rows) -> np.ndarray:
        """dtNodeQueue::pop for each row (trickleDown, then bubbleUp of the last node)."""
        heap, total, cap = self.heap_f, self.total_f, self.cap
        base = rows * cap
        best = heap[base].copy()
        self.size[rows] -= 1
        size = self.size[rows]
        node = heap[base + size].copy()
        i = np.zeros(rows.shape[0], dtype=np.int64)
        child = np.ones(rows.shape[0], dtype=np.int64)
        live = np.arange(rows.shape[0])
        while True:
            go = child[live] < size[live]
            live = live[go]
            if not live.shape[0]:
                break
            b = base[live]
            c = child[live]
            c1 = c + 1
            right = (c1 < size[live]) & (
                total[b + heap[b + c]] > total[b + heap[b + np.minimum(c1, cap - 1)]]
            )
            c = np.where(right, c1, c)
            heap[b + i[live]] = heap[b + c]
            i[live] = c
            child[live] = c * 2 + 1
        self.bubble_up(rows, i, node)
        return best

    def find_in_heap(self, rows, node) -> np.ndarray:
        cols = np.arange(self.heap.shape[1])[None, :]
        hit = (self.heap[rows] == node[:, None]) & (cols < self.size[rows][:, None])
        return np.argmax(hit, axis=1)


def _chunks(n: int, keys: int):
    step = max(1, MAP_BUDGET // max(1, keys))
    for s in range(0, n, step):
        yield np.arange(s, min(n, s + step))


def _mid_first(nav: NavMesh) -> np.ndarray:
    from .search import first_link_mids

    return first_link_mids(nav)


def find_paths(
    nav: NavMesh,
    start_ref: np.ndarray,
    end_ref: np.ndarray,
    start_pos: np.ndarray,
    end_pos: np.ndarray,
    pass_ok: np.ndarray,
    area_cost: np.ndarray,
    max_nodes: int,
    max_path: int,
):
    """findPath for many queries (refs valid, positions finite, start != end, max_path > 0)
    -> (status int64 (n,), count int64 (n,), refs int64 flat, query by query).

    The open-list engine (`_find_paths_open`) pops the open node of least total of every query
    by an argmin over per-node totals: that is exactly the node Detour's heap pops whenever the
    least total is unique. A query that meets a tie (another open node with the same total
    when popping) is answered again by an engine that keeps Detour's heap layout (the
    single-query engine for a few, `_find_paths_chunk` in lockstep for many), so ties break as
    in Detour."""
    n = start_ref.shape[0]
    status = np.zeros(n, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    parts = []
    multi = nav.tile_count > 1
    states = 4 if multi else 1
    keys = nav.poly_count * states
    cap = int(min(max_nodes, keys))
    redo = []
    for chunk in _chunks(n, keys):
        st, cnt, flat, tie = _find_paths_open(
            nav, start_ref[chunk], end_ref[chunk], start_pos[chunk], end_pos[chunk], pass_ok,
            area_cost, max_nodes, max_path, states,
        )  # fmt: skip
        status[chunk] = st
        count[chunk] = cnt
        parts.append((chunk[~tie], flat))
        redo.append(chunk[tie])
    tied = np.concatenate(redo) if redo else np.zeros(0, np.int64)
    if tied.shape[0] > TIES_ONE_BY_ONE:
        for chunk in _chunks(tied.shape[0], keys):
            rows = tied[chunk]
            st, cnt, flat = _find_paths_chunk(
                nav, start_ref[rows], end_ref[rows], start_pos[rows], end_pos[rows], pass_ok,
                area_cost, max_nodes, max_path, states, cap,
            )  # fmt: skip
            status[rows] = st
            count[rows] = cnt
            parts.append((rows, flat))
    elif tied.shape[0]:
        from . import search

        tables = _search_tables(nav)
        ok_list = np.asarray(pass_ok, bool).tolist()
        for row in tied.tolist():
            st1, path = search.find_path(
                tables, int(start_ref[row]), int(end_ref[row]), start_pos[row], end_pos[row],
                ok_list, area_cost, max_nodes, max_path,
            )  # fmt: skip
            status[row] = st1
            count[row] = len(path)
            parts.append((np.array([row]), np.asarray(path, dtype=np.int64)))
    start = np.cumsum(count) - count
    out = np.zeros(int(count.sum()), dtype=np.int64)
    for rows, flat in parts:
        if rows.shape[0]:
            out[_ranges(start[rows], count[rows])] = flat
    return status, count, out


#: Up to this many tied queries are answered one by one (`core.nav.search`), more in lockstep.
TIES_ONE_BY_ONE = 48
_INF = F32(np.inf)
#: Open-list slot k counts as 1 + (k << 16) in the pop's equal-to-least sum.
_SLOT_CODE = (1 + (np.arange(1 << 15, dtype=np.uint32) << 16))[:, None]


def _search_tables(nav: NavMesh):
    from .search import SearchTables

    cached = getattr(nav, "_lockstep_tables", None)
    if cached is None or cached.nav is not nav or cached.mid is not _mid_first(nav):
        cached = SearchTables(nav)
        nav._lockstep_tables = cached  # type: ignore[attr-defined]
    return cached


def _find_paths_open(
    nav, start_ref, end_ref, start_pos, end_pos, pass_ok, area_cost, max_nodes, max_path, states
):
    """findPath for one chunk of queries, nodes keyed densely by (polygon, state), open lists
    unordered (a pop takes the least total) -> (status, count, flat refs of the untied queries,
    tie mask). A tied query (two open nodes of equal least total at a pop) stops at once; its
    outputs are left to the caller. Memory: 14-20 bytes per (query, key) [Limit: chunked by
    MAP_BUDGET keys]."""
    nq = start_ref.shape[0]
    K = nav.poly_count * states
    mid = _mid_first(nav)
    ac = np.asarray(area_cost, dtype=F32)
    link_start, link_ref, link_side = nav.link_start, nav.link_ref, nav.link_side
    link_state = np.where(link_side != SIDE_INTERNAL, link_side >> 1, 0) if states > 1 else 0
    deg_all = np.diff(link_start)
    slots = max(int(deg_all.max()) if deg_all.shape[0] else 0, 1)
    nl = link_ref.shape[0]
    # Per link: target, node key, filter verdict; a sentinel link nl that never passes pads
    # each polygon's row of the slot table.
    l_ref = np.r_[link_ref, -2]
    l_key = np.r_[link_ref * states + link_state, 0]
    l_ok = np.r_[np.asarray(pass_ok, bool)[link_ref], False]
    cols = np.arange(slots)[None, :]
    slot_table = np.where(cols < deg_all[:, None], link_start[:-1, None] + cols, nl)
    slot_ref = l_ref[slot_table]
    slot_ok = l_ok[slot_table]
    slot_key = l_key[slot_table]
    # Two links of one polygon to the same node (tile borders): the second visit computes the
    # same total as the first and is always skipped, so it is dropped.
    sk = np.where(slot_ok, slot_key, -1 - cols)
    sk = np.sort(sk, axis=1)
    if np.any((sk[:, 1:] == sk[:, :-1]) & (sk[:, 1:] >= 0)):
        for c in range(1, slots):
            dup = np.any((slot_key[:, :c] == slot_key[:, c : c + 1]) & slot_ok[:, :c], axis=1)
            slot_ok[:, c] &= ~dup
    slot_table_f = slot_table.reshape(-1)
    slot_ref_f = slot_ref.reshape(-1)
    slot_key_f = slot_key.reshape(-1)
    combos = _candidate_lists(nav, slot_table, slot_ref, slot_ok, slot_key)
    walk = ac[nav.poly_area]
    # Node positions: link k's portal mid point at k < nl, query q's start point at nl + q.
    mx, my, mz = (np.r_[mid[:, k], start_pos[:, k]].astype(F32) for k in range(3))
    ex, ey, ez = (np.ascontiguousarray(end_pos[:, k], dtype=F32) for k in range(3))
    start_ref = start_ref.astype(np.int64)
    end_ref = end_ref.astype(np.int64)
    end_area_cost = ac[nav.poly_area[end_ref]]
    limited = max_nodes < K
    # Node state per (query, key), flat at query * K + key. A node not in the pool has total
    # +inf, so every first visit beats it; opos is its slot in the query's open list (-1: not
    # open, i.e. closed or not in the pool).
    total = np.full(nq * K, _INF, dtype=F32)
    cost = np.zeros(nq * K, dtype=F32)
    # Narrow integers when every value fits: less memory traffic in the gathers.
    small = max(K + 1, nl + nq) < (1 << 15)
    index_t = np.int16 if small else np.int32
    parent = np.zeros(nq * K, dtype=index_t)  # parent key + 1, 0 = none
    came = np.zeros(nq * K, dtype=index_t)  # link that created the node (nl + q: start)
    opos = np.full(nq * K, -1, dtype=index_t)
    rows_all = np.arange(nq)
    s_key = start_ref * states
    t0 = _dist(start_pos, end_pos) * H_SCALE
    i0 = rows_all * K + s_key
    total[i0] = t0
    opos[i0] = 0
    came[i0] = nl + rows_all
    used = np.ones(nq, dtype=np.int64)
    last_best = s_key.copy()
    last_best_cost = t0.copy()
    out_of_nodes = np.zeros(nq, dtype=bool)
    tie = np.zeros(nq, dtype=bool)
    # Open lists of the queries still searched, one column each (column i is query act[i];
    # columns are compacted now and then): totals (+inf past the end) and keys, in no
    # particular order. Column-major so that per-query reductions run along contiguous rows.
    width = 16
    otot = np.full((width, nq), _INF, dtype=F32)
    okey = np.zeros((width, nq), dtype=np.int64)
    otot[0] = t0
    okey[0] = s_key
    osize = np.ones(nq, dtype=np.int64)
    act = rows_all
    live = np.ones(nq, dtype=bool)
    while True:
        mb = act.shape[0]
        view = otot[: max(int(osize.max()), 1)]
        least = view.min(axis=0)
        # Per query: how many open totals equal the least (low 16 bits) and, when one does,
        # its slot (high bits).
        code = np.add.reduce((view == least) * _SLOT_CODE[: view.shape[0]], axis=0)
        live &= least < _INF
        # Another open node with the least total: Detour's heap layout decides; redo later.
        tied = live & ((code & 0xFFFF) > 1)
        if tied.any():
            tie[act[tied]] = True
            live &= ~tied
        li = np.flatnonzero(live)
        if not li.shape[0]:
            break
        of = otot.reshape(-1)
        kf = okey.reshape(-1)
        j = (code[li] >> 16).astype(np.int64)
        fj = j * mb + li
        # Pop: the list's last entry takes the popped slot.
        g = act[li]
        b = kf[fj]
        lastp = (osize[li] - 1) * mb + li
        moved = kf[lastp]
        of[fj] = of[lastp]
        kf[fj] = moved
        opos[g * K + moved] = j
        of[lastp] = _INF
        osize[li] -= 1
        ib = g * K + b
        opos[ib] = -1
        bref = b // states if states > 1 else b
        reached = bref == end_ref[g]
        if reached.any():
            last_best[g[reached]] = b[reached]
            live[li[reached]] = False
            keep = ~reached
            li, g, b, ib, bref = li[keep], g[keep], b[keep], ib[keep], bref[keep]
        # (pk - 1) // states is -1 for the start node (pk = 0): no parent.
        parent_ref = (parent[ib] - 1) // states
        bcost = cost[ib]
        cb = came[ib]
        bx, by, bz = mx[cb], my[cb], mz[cb]
        if combos is not None:
            # The best node's links that pass the filter and do not lead back to its parent,
            # in link order: one precomputed list per (polygon, parent).
            c_of, c_deg, c_start, c_link, c_ref, c_key = combos
            combo = c_of[bref * (nav.poly_count + 1) + parent_ref + 1]
            deg = c_deg[combo]
            n_cand = int(deg.sum())
            if n_cand:
                pi = np.repeat(np.arange(deg.shape[0]), deg)
                fs = np.repeat(c_start[combo] - (np.cumsum(deg) - deg), deg) + np.arange(n_cand)
                ks, nr, key = c_link[fs], c_ref[fs], c_key[fs]
        else:
            m = slot_ok[bref] & (slot_ref[bref] != parent_ref[:, None])
            fm = np.flatnonzero(m)
            n_cand = fm.shape[0]
            if n_cand:
                pi = fm // slots
                fs = bref[pi] * slots + (fm - pi * slots)
                ks, nr, key = slot_table_f[fs], slot_ref_f[fs], slot_key_f[fs]
        if n_cand:
            rs = g[pi]
            ix = rs * K + key
            told = total[ix]
            new = told == _INF
            if limited and new.any():
                full = _pool_full(new, pi, used, rs, max_nodes)
                if full.any():
                    out_of_nodes[rs[full]] = True
                    keep = ~full
                    pi, ks, nr, key, rs, ix, new, told = (
                        pi[keep], ks[keep], nr[keep], key[keep], rs[keep], ix[keep], new[keep],
                        told[keep],
                    )  # fmt: skip
                np.add.at(used, rs[new], 1)
            nc = np.where(new, ks, came[ix])
            nx, ny, nz = mx[nc], my[nc], mz[nc]
            dx, dy, dz = nx - bx[pi], ny - by[pi], nz - bz[pi]
            cur = np.sqrt(dx * dx + dy * dy + dz * dz) * walk[bref][pi]
            dx, dy, dz = ex[rs] - nx, ey[rs] - ny, ez[rs] - nz
            d_end = np.sqrt(dx * dx + dy * dy + dz * dz)
            is_end = nr == end_ref[rs]
            base = bcost[pi] + cur
            if is_end.any():
                c = np.where(is_end, base + d_end * end_area_cost[rs], base).astype(F32)
                heur = np.where(is_end, _ZERO, d_end * H_SCALE).astype(F32)
            else:
                c = base
                heur = d_end * H_SCALE
            tot = c + heur
            go = ~(tot >= told)
            if not go.all():
                w = np.flatnonzero(go)
                pi, key, rs, ix, c, heur, tot, nc = (
                    pi[w], key[w], rs[w], ix[w], c[w], heur[w], tot[w], nc[w]
                )  # fmt: skip
            parent[ix] = b[pi] + 1
            cost[ix] = c
            total[ix] = tot
            came[ix] = nc
            # Open list: update in place, or append (closed or new nodes), in link order.
            op = opos[ix].astype(np.int64)
            lrow = li[pi]
            w = np.flatnonzero(op < 0)
            if w.shape[0]:
                # Appended after the list's end in link order: rank among the pop's appends.
                lw = lrow[w]
                pw = pi[w]
                at = np.arange(w.shape[0])
                first = np.empty(w.shape[0], dtype=bool)
                first[0] = True
                np.not_equal(pw[1:], pw[:-1], out=first[1:])
                opw = osize[lw] + at - np.maximum.accumulate(np.where(first, at, 0))
                op[w] = opw
                need = int(opw.max()) + 1
                if need > width:
                    grown = max(need, width * 2)
                    otot = np.concatenate([otot, np.full((grown - width, mb), _INF, F32)])
                    okey = np.concatenate([okey, np.zeros((grown - width, mb), np.int64)])
                    width = grown
                    of = otot.reshape(-1)
                    kf = okey.reshape(-1)
                osize += np.bincount(lw, minlength=mb)
                opos[ix[w]] = opw
                kf[opw * mb + lw] = key[w]
            of[op * mb + lrow] = tot
            better = heur < last_best_cost[rs]
            if better.any():
                w = np.flatnonzero(better)
                _first_least(w, pi[w], heur[w], rs[w], key[w], last_best, last_best_cost)
        n_live = int(np.count_nonzero(live))
        if not n_live:
            break
        if n_live < mb - (mb >> 2):
            idx = np.flatnonzero(live)
            # np.take along axis 1 gives C-ordered copies: of / kf stay views of them.
            otot, okey = np.take(otot, idx, axis=1), np.take(okey, idx, axis=1)
            osize, act = osize[idx], act[idx]
            live = np.ones(idx.shape[0], dtype=bool)
    # Corridors: follow parents from the last best node.
    status = np.full(nq, SUCCESS, dtype=np.int64)
    chains = []
    cur_key = last_best.copy()
    alive = ~tie
    while alive.any():
        rr = np.flatnonzero(alive)
        kk = cur_key[rr]
        chains.append((rr, kk // states if states > 1 else kk))
        p = parent[rr * K + kk]
        cur_key[rr] = p - 1
        alive[rr[p == 0]] = False
    length = np.zeros(nq, dtype=np.int64)
    for rr, _ in chains:
        length[rr] += 1
    count = np.minimum(length, max_path)
    start = np.cumsum(count) - count
    flat = np.empty(int(count.sum()), dtype=np.int64)
    for depth, (rr, refs) in enumerate(chains):
        at = length[rr] - 1 - depth  # position from the start of the corridor
        keep = at < max_path
        flat[start[rr[keep]] + at[keep]] = refs[keep]
    status[length > max_path] |= BUFFER_TOO_SMALL
    best_ref = last_best // states if states > 1 else last_best
    status[best_ref != end_ref] |= PARTIAL_RESULT
    status[out_of_nodes] |= OUT_OF_NODES
    return status, count, flat, tie


#: Polygon counts n with n * (n + 1) up to this get per-(polygon, parent) candidate lists.
COMBO_TABLE_MAX = 1 << 22


def _candidate_lists(nav: NavMesh, slot_table, slot_ref, slot_ok, slot_key):
    """Per (polygon p, parent ref r): the links of p that pass the filter and do not lead to r,
    in link order, as CSR lists -> (combo of p * (npolys + 1) + r + 1, degree, start, link,
    target ref, node key), or None for navmeshes too large for the dense table. Combo
    p * (slots + 1) is "no parent among p's links"; p * (slots + 1) + s + 1 excludes the
    target of p's slot s."""
    n, slots = slot_table.shape
    if n * (n + 1) > COMBO_TABLE_MAX:
        return None
    mask = np.empty((n, slots + 1, slots), dtype=bool)
    mask[:, 0] = slot_ok
    mask[:, 1:] = slot_ok[:, None, :] & (slot_ref[:, None, :] != slot_ref[:, :, None])
    polys = np.arange(n)
    combo_of = np.repeat((polys * (slots + 1))[:, None], n + 1, axis=1)
    real = slot_ref >= 0  # sentinel slots (ref -2) lead nowhere
    p_idx, s_idx = np.nonzero(real)
    combo_of[p_idx, slot_ref[p_idx, s_idx] + 1] = p_idx * (slots + 1) + s_idx + 1
    flat = mask.reshape(-1, slots)
    deg = flat.sum(axis=1).astype(np.int64)
    start = np.cumsum(deg) - deg
    c_idx, s_of = np.nonzero(flat)
    owner = c_idx // (slots + 1)
    link = slot_table[owner, s_of]
    return (combo_of.reshape(-1), deg, start, link, slot_ref[owner, s_of], slot_key[owner, s_of])


def _pool_full(new, pi, used, rs, max_nodes):
    """Candidates that find the node pool full: new nodes get ids used, used + 1, ... in link
    order within each pop (pi sorted); ids >= max_nodes are refused (dtNodePool's limit)."""
    return new & (used[rs] + _rank_in_pop(new, pi) >= max_nodes)


def _rank_in_pop(mask, pi):
    """Per candidate: how many candidates of the same pop (pi sorted) before it are in mask."""
    cn = np.cumsum(mask)
    first = np.r_[True, pi[1:] != pi[:-1]]
    group = np.cumsum(first) - 1
    return cn - mask - (cn - mask)[np.flatnonzero(first)][group]


def _first_least(w, pop, heur, rows, key, last_best, last_best_cost):
    """lastBestNode updates of one round: per pop, the first candidate of least heuristic
    (all candidates here beat the query's current best, candidates in link order)."""
    first = np.r_[True, pop[1:] != pop[:-1]]
    starts = np.flatnonzero(first)
    least = np.minimum.reduceat(heur, starts)
    group = np.cumsum(first) - 1
    at = np.flatnonzero(heur == least[group])
    ga = group[at]
    at = at[np.r_[True, ga[1:] != ga[:-1]]]
    last_best_cost[rows[at]] = heur[at]
    last_best[rows[at]] = key[at]


def _find_paths_chunk(
    nav, start_ref, end_ref, start_pos, end_pos, pass_ok, area_cost, max_nodes, max_path,
    states, cap,
):  # fmt: skip
    nq = start_ref.shape[0]
    keys = nav.poly_count * states
    P = _Pools(nq, keys, cap)
    mid = _mid_first(nav)
    ac = np.asarray(area_cost, dtype=F32)
    link_start, link_ref, link_side = nav.link_start, nav.link_ref, nav.link_side
    link_state = np.where(link_side != SIDE_INTERNAL, link_side >> 1, 0) if states > 1 else None
    deg_all = np.diff(link_start)
    max_deg = int(deg_all.max()) if deg_all.shape[0] else 0
    # Per link, query-independent: target, node key, filter verdict; one sentinel link (index
    # nl) that never passes pads each polygon's slot row.
    nl = link_ref.shape[0]
    l_ref = np.r_[link_ref, -2]
    l_key = np.r_[link_ref * states + (link_state if link_state is not None else 0), 0]
    l_ok = np.r_[pass_ok[link_ref], False]
    slot_table = np.where(
        np.arange(max(max_deg, 1))[None, :] < deg_all[:, None],
        link_start[:-1, None] + np.arange(max(max_deg, 1))[None, :], nl,
    )  # fmt: skip
    # Portal mid points and start/end points as x, y, z arrays (1-D gathers).
    mx, my, mz = (np.ascontiguousarray(gatherable(mid)[:, k]) for k in range(3))
    sx, sy, sz = (np.ascontiguousarray(start_pos[:, k]) for k in range(3))
    ex_, ey_, ez_ = (np.ascontiguousarray(end_pos[:, k]) for k in range(3))
    rows_all = np.arange(nq)
    start_ref = start_ref.astype(np.int64)
    end_ref = end_ref.astype(np.int64)
    P.node_of_f[(rows_all) * P.keys + (start_ref * states)] = 0
    P.ref[:, 0] = start_ref
    P.total[:, 0] = _dist(start_pos, end_pos) * H_SCALE
    P.flags[:, 0] = 1
    P.count[:] = 1
    P.heap[:, 0] = 0
    P.size[:] = 1
    last_best = np.zeros(nq, dtype=np.int64)
    last_best_cost = P.total[:, 0].copy()
    out_of_nodes = np.zeros(nq, dtype=bool)
    end_area_cost = ac[nav.poly_area[end_ref]]
    active = rows_all.copy()
    while active.shape[0]:
        r = active[P.size[active] > 0]
        if not r.shape[0]:
            break
        best = P.pop(r)
        ib = r * P.cap + best
        P.flags_f[ib] = (P.flags_f[ib] & ~1) | 2
        bref = P.ref_f[ib]
        reached = bref == end_ref[r]
        last_best[r[reached]] = best[reached]
        done = r[reached]
        r, best, bref, ib = r[~reached], best[~reached], bref[~reached], ib[~reached]
        pidx = P.pidx_f[ib]
        parent_ref = np.where(pidx > 0, P.ref_f[(r) * P.cap + (np.maximum(pidx - 1, 0))], -1)
        bcost = P.cost_f[ib]
        came = P.came_f[ib]
        has_came = came >= 0
        cc = np.maximum(came, 0)
        bx = np.where(has_came, mx[cc], sx[r])
        by = np.where(has_came, my[cc], sy[r])
        bz = np.where(has_came, mz[cc], sz[r])
        walk_cost = ac[nav.poly_area[bref]]
        slots = slot_table[bref]
        er = end_ref[r]
        for slot in range(max_deg):
            k = slots[:, slot]
            m = l_ok[k] & (l_ref[k] != parent_ref)
            sel = np.flatnonzero(m)
            if not sel.shape[0]:
                continue
            rs, ks = r[sel], k[sel]
            nr = l_ref[ks]
            key = l_key[ks]
            nb = P.node_of_f[rs * P.keys + key].astype(np.int64)
            new = nb < 0
            if new.any():
                full = new & (P.count[rs] >= max_nodes)
                if full.any():
                    out_of_nodes[rs[full]] = True
                    keep = ~full
                    sel, rs, ks, nr, key, nb, new = (
                        sel[keep], rs[keep], ks[keep], nr[keep], key[keep], nb[keep], new[keep],
                    )  # fmt: skip
                    if not rs.shape[0]:
                        continue
                # New nodes: flags, costs and parent are all written below (a new node is
                # never skipped); the pool starts zeroed.
                rn = rs[new]
                ids = P.count[rn]
                P.count[rn] += 1
                nb[new] = ids
                P.node_of_f[rn * P.keys + key[new]] = ids
                inew = rn * P.cap + ids
                P.ref_f[inew] = nr[new]
                P.came_f[inew] = ks[new]
            nc = P.came_f[rs * P.cap + nb]
            nx, ny, nz = mx[nc], my[nc], mz[nc]
            dx, dy, dz = nx - bx[sel], ny - by[sel], nz - bz[sel]
            cur = np.sqrt(dx * dx + dy * dy + dz * dz) * walk_cost[sel]
            dx, dy, dz = ex_[rs] - nx, ey_[rs] - ny, ez_[rs] - nz
            d_end = np.sqrt(dx * dx + dy * dy + dz * dz)
            is_end = nr == er[sel]
            base = bcost[sel] + cur
            cost = np.where(is_end, base + d_end * end_area_cost[rs], base).astype(F32)
            heur = np.where(is_end, _ZERO, d_end * H_SCALE).astype(F32)
            total = cost + heur
            ix = rs * P.cap + nb
            fl = P.flags_f[ix]
            skip = ((fl & 3) != 0) & (total >= P.total_f[ix])
            go = ~skip
            if not go.any():
                continue
            rs, nb, fl, cost, total, heur = rs[go], nb[go], fl[go], cost[go], total[go], heur[go]
            ix = ix[go]
            bsel = best[sel[go]]
            P.pidx_f[ix] = (bsel + 1).astype(np.int32)
            fl = fl & ~2
            P.cost_f[ix] = cost
            P.total_f[ix] = total
            was_open = (fl & 1) != 0
            P.flags_f[ix] = fl | 1
            pos = np.empty(rs.shape[0], dtype=np.int64)
            if was_open.any():
                pos[was_open] = P.find_in_heap(rs[was_open], nb[was_open])
            pushed = ~was_open
            if pushed.any():
                pos[pushed] = P.size[rs[pushed]]
                P.size[rs[pushed]] += 1
            P.bubble_up(rs, pos, nb)
            better = heur < last_best_cost[rs]
            last_best_cost[rs[better]] = heur[better]
            last_best[rs[better]] = nb[better]
        finished = np.zeros(nq, dtype=bool)
        finished[done] = True
        active = active[~finished[active] & (P.size[active] > 0)]
    # Corridors: follow parents from the last best node.
    status = np.full(nq, SUCCESS, dtype=np.int64)
    chains = []
    cur = last_best.copy()
    alive = np.ones(nq, dtype=bool)
    while alive.any():
        rr = np.nonzero(alive)[0]
        chains.append((rr, P.ref_f[(rr) * P.cap + (cur[rr])]))
        p = P.pidx_f[(rr) * P.cap + (cur[rr])]
        cur[rr] = p - 1
        alive[rr[p == 0]] = False
    length = np.zeros(nq, dtype=np.int64)
    for rr, _ in chains:
        length[rr] += 1
    count = np.minimum(length, max_path)
    start = np.cumsum(count) - count
    flat = np.empty(int(count.sum()), dtype=np.int64)
    for depth, (rr, refs) in enumerate(chains):
        at = length[rr] - 1 - depth  # position from the start of the corridor
        keep = at < max_path
        flat[start[rr[keep]] + at[keep]] = refs[keep]
    status[length > max_path] |= BUFFER_TOO_SMALL
    status[P.ref_f[(rows_all) * P.cap + (last_best)] != end_ref] |= PARTIAL_RESULT
    status[out_of_nodes] |= OUT_OF_NODES
    return status, count, flat


def solid_edges(nav: NavMesh, pass_ok: np.ndarray) -> np.ndarray:
    """bool (npolys, 6): edge j (vertex j -> j+1) is a wall for findDistanceToWall under the
    filter: no neighbour, a filtered-out neighbour, or a tile-border edge whose first link on
    that edge leads to a filtered-out polygon (or has no link)."""
    n = nav.poly_count
    nei = nav.poly_neis.astype(np.int64)
    solid = np.ones((n, 6), dtype=bool)
    internal = (nei != 0) & ((nei & EXT_LINK) == 0)
    tile_base = nav.tile_poly_base[nav.poly_tile.astype(np.int64)]
    target = np.where(internal, tile_base[:, None] + nei - 1, 0)
    solid[internal] = ~pass_ok[target[internal]]
    # Links along polygon edges only: a link into an off-mesh connection has edge 0xff (its
    # owner*6 + 255 fell outside the table, or on another polygon's edge).
    on_edge = np.flatnonzero(nav.link_edge.astype(np.int64) < 6)
    if on_edge.shape[0]:
        key = nav.link_owner[on_edge].astype(np.int64) * 6 + nav.link_edge[on_edge]
        _, first = np.unique(key, return_index=True)
        ext_ok = np.zeros(n * 6, dtype=bool)
        ext_ok[key[first]] = pass_ok[nav.link_ref[on_edge[first]]]
        ext = (nei & EXT_LINK) != 0
        solid[ext] = ~ext_ok.reshape(n, 6)[ext]
    return solid


def find_distance_to_wall(
    nav: NavMesh,
    start_ref: np.ndarray,
    centers: np.ndarray,
    max_radius: np.float32,
    pass_ok: np.ndarray,
    max_nodes: int,
):
    """findDistanceToWall for many queries (refs valid, centers finite, radius >= 0) ->
    (status int64, distance float32, hit position (n, 3) NaN when no wall, normal (n, 3))."""
    n = start_ref.shape[0]
    status = np.zeros(n, dtype=np.int64)
    dist = np.zeros(n, dtype=F32)
    pos = np.full((n, 3), np.nan, dtype=F32)
    normal = np.full((n, 3), np.nan, dtype=F32)
    keys = nav.poly_count
    cap = int(min(max_nodes, keys))
    solid = solid_edges(nav, pass_ok)
    for chunk in _chunks(n, keys):
        s, d, p, nm = _wall_chunk(
            nav, start_ref[chunk], centers[chunk], max_radius, pass_ok, solid, max_nodes, cap
        )
        status[chunk], dist[chunk], pos[chunk], normal[chunk] = s, d, p, nm
    return status, dist, pos, normal


def _wall_chunk(nav, start_ref, centers, max_radius, pass_ok, solid, max_nodes, cap):
    from .batch import dist_pt_seg_sqr_2d

    nq = start_ref.shape[0]
    P = _Pools(nq, nav.poly_count, cap)
    mid = gatherable(_mid_first(nav))
    link_start, link_ref, link_edge = nav.link_start, nav.link_ref, nav.link_edge
    deg_all = np.diff(link_start)
    max_deg = int(deg_all.max()) if deg_all.shape[0] else 0
    rows_all = np.arange(nq)
    start_ref = start_ref.astype(np.int64)
    P.node_of_f[(rows_all) * P.keys + (start_ref)] = 0
    P.ref[:, 0] = start_ref
    P.flags[:, 0] = 1
    P.count[:] = 1
    P.size[:] = 1
    radius_sqr = np.full(nq, F32(max_radius) * F32(max_radius), dtype=F32)
    hit = np.full((nq, 3), np.nan, dtype=F32)
    status = np.full(nq, SUCCESS, dtype=np.int64)
    offmesh = nav.poly_type == POLYTYPE_OFFMESH_CONNECTION
    active = rows_all.copy()
    while active.shape[0]:
        r = active
        best = P.pop(r)
        ib = r * P.cap + best
        P.flags_f[ib] = (P.flags_f[ib] & ~1) | 2
        bref = P.ref_f[ib]
        pidx = P.pidx_f[ib]
        parent_ref = np.where(pidx > 0, P.ref_f[(r) * P.cap + (np.maximum(pidx - 1, 0))], -1)
        came = P.came_f[ib]
        c = centers[r]
        bpos = np.where((came >= 0)[:, None], mid[np.maximum(came, 0)], c)
        btotal = P.total_f[ib]
        nv = nav.poly_vert_count[bref].astype(np.int64)
        verts = nav.poly_pos[bref]
        rows = np.arange(r.shape[0])
        # Walls, edges in Detour's order: (nv-1 -> 0), (0 -> 1), ...
        for i in range(6):
            j = np.where(i == 0, nv - 1, i - 1)
            vi = verts[:, i]
            vj = verts[rows, j]
            d, t = dist_pt_seg_sqr_2d(c, vj, vi)
            rs = radius_sqr[r]
            take = (i < nv) & solid[bref, j] & ~(d > rs)
            if take.any():
                radius_sqr[r[take]] = d[take]
                tt = t[take][:, None]
                a, b = vj[take], vi[take]
                hit[r[take]] = a + (b - a) * tt
        lo = link_start[bref]
        deg = link_start[bref + 1] - lo
        for slot in range(max_deg):
            m = slot < deg
            k = np.where(m, lo + slot, 0)
            nref = link_ref[k]
            m &= (nref != parent_ref) & ~offmesh[nref]
            if not m.any():
                continue
            # A link into an off-mesh connection (masked out above) has edge 0xff.
            e = np.where(m, link_edge[k], 0)
            va = verts[rows, e]
            vb = verts[rows, (e + 1) % np.maximum(nv, 1)]
            d, _t = dist_pt_seg_sqr_2d(c, va, vb)
            m &= ~(d > radius_sqr[r]) & pass_ok[nref]
            if not m.any():
                continue
            sel = np.nonzero(m)[0]
            rs, ks, nr = r[sel], k[sel], nref[sel]
            nb = P.node_of_f[(rs) * P.keys + (nr)].astype(np.int64)
            new = nb < 0
            full = new & (P.count[rs] >= max_nodes)
            status[rs[full]] |= OUT_OF_NODES
            keep = ~full
            sel, rs, ks, nr, nb, new = sel[keep], rs[keep], ks[keep], nr[keep], nb[keep], new[keep]
            if new.any():
                rn = rs[new]
                ids = P.count[rn]
                P.count[rn] += 1
                nb[new] = ids
                P.node_of_f[(rn) * P.keys + (nr[new])] = ids
                inew = rn * P.cap + ids
                P.ref_f[inew] = nr[new]
                P.pidx_f[inew] = 0
                P.total_f[inew] = 0
                P.flags_f[inew] = 0
                P.came_f[inew] = ks[new]
            ix = rs * P.cap + nb
            fl = P.flags_f[ix]
            go = (fl & 2) == 0
            npos = mid[P.came_f[ix]]
            total = btotal[sel] + _dist(bpos[sel], npos)
            go &= ~(((fl & 1) != 0) & (total >= P.total_f[ix]))
            if not go.any():
                continue
            rs, nb, fl, total, ix = rs[go], nb[go], fl[go], total[go], ix[go]
            P.pidx_f[ix] = (best[sel[go]] + 1).astype(np.int32)
            P.total_f[ix] = total
            was_open = (fl & 1) != 0
            P.flags_f[ix] = (fl & ~2) | 1
            where = np.empty(rs.shape[0], dtype=np.int64)
            if was_open.any():
                where[was_open] = P.find_in_heap(rs[was_open], nb[was_open])
            pushed = ~was_open
            if pushed.any():
                where[pushed] = P.size[rs[pushed]]
                P.size[rs[pushed]] += 1
            P.bubble_up(rs, where, nb)
        active = active[P.size[active] > 0]
    diff = (centers - hit).astype(F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = _ONE / np.sqrt(
            diff[:, 0] * diff[:, 0] + diff[:, 1] * diff[:, 1] + diff[:, 2] * diff[:, 2]
        )
        normal = diff * inv[:, None]
    return status, np.sqrt(radius_sqr), hit, normal.astype(F32)
