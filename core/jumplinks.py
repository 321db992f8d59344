"""Automatic jump and drop links from a baked navmesh's boundary edges (issue #15, item 4).

Input: one solo bake's `PolyMesh` (its boundary edges: polygon edges with no neighbour), its
`CompactHeightfield` (the walkable floors and their regions, i.e. where the navmesh is), its
solid `Heightfield` (what an arc must not pass through) and its `PolyMeshDetail` (the Detour
navmesh the link ends must connect to). Output: `core.offmesh.OffMeshLinks`, Z-up world.

The rule, for every boundary edge at once:

1. Samples: an edge of length L gets ``max(1, floor(L / spacing))`` evenly spaced samples, at
   the middles of equal parts, so two samples of one edge (and of two collinear edges) are at
   least ``spacing`` apart. A sample's start height is the navmesh floor just inside the edge
   (the region span of the compact heightfield nearest the polygon edge's height).
2. Probe: from each sample, points every half cell straight out of the polygon (the edge's
   outward normal), up to ``max_jump_distance`` horizontally. A probe is a *gap* when its
   column has no solid span top within climb of the start height (a hole, a drop or a wall);
   it is a *landing* when its column has navmesh floor (a compact span with a region) from
   ``max_drop`` below to climb above the start height (the highest such floor). The link's end
   is the first landing after a gap.
3. Kind: an end more than climb below the start is a drop (one-way, start -> end); an end
   within climb of the start is a jump (two-way). Ends higher than climb are never made (the
   drop from up there is the link).
4. Clearance: the agent follows `arc_points`, a parabola from start to end that peaks a quarter
   of its horizontal length above the higher end (a 45 degree jump); at every step of it (a
   half cell apart) the agent's columns (its centre, and agent_radius to either side across
   the link), from the arc up to the agent's height above it (the whole height swept between
   two steps), must be free of solid spans. One cell height under the arc is tolerated (voxel
   rounding of floors the arc starts from and lands on).
5. Connection: both ends must connect to the navmesh as Detour connects them (its nearest
   polygon within the link radius horizontally and climb vertically; `core.nav.batch`).
6. Deduplication: of two links in the same direction whose starts and ends are both closer
   than ``spacing``, the later (in edge order) is dropped. A two-way jump across a gap is made
   from each side's edge, so both sides have links.

Heights are the voxel floors (``bmin.z + y * ch``). Every step is vectorized across edges,
samples, probes and arc steps. Links have radius max(agent_radius, cs), area
`DEFAULT_LINK_AREA`, flags `DEFAULT_LINK_FLAGS`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .compact import CompactHeightfield
from .detail import PolyMeshDetail
from .errors import VoxNavError
from .heightfield import Heightfield
from .limits import round_up
from .offmesh import OffMeshLinks
from .polymesh import MESH_NULL_IDX, PolyMesh

#: Region flag of border regions (tiles); such spans are not navmesh. [Recast: RC_BORDER_REG]
_BORDER_REG = 0x8000
#: Neighbour flag of a polygon edge on a tile's border (``0x8000 | dir``). [Recast]
_PORTAL = 0x8000
#: Probe and arc step as a fraction of the cell size: finer than a cell so no column is skipped.
STEP_CELLS = 0.5
#: Probes (and arc steps) handled per chunk: bounds the temporary arrays (a few hundred MB).
CHUNK_PROBES = 1 << 20
#: Most samples (step 1) one bake or tile takes (at the default link_spacing of 1 m, 2,000 km
#: of navmesh edges). Samples are made and probed a chunk at a time (some 250 MiB whatever
#: their count), but every sample may become a link, and each found link is held until the end
#: with its arc checks and connection query (about 300 bytes traced: the gap scene at 4
#: million samples found 534,145 links, 390 MiB peak); so at most some 850 MiB when every
#: sample lands. A link_spacing far below a cell made hundreds of millions (dungeon at 1e-5: 60
#: million, a MemoryError at 5.5 GB). [Units: samples]
MAX_LINK_SAMPLES = 1 << 21
#: Most probe points (samples x steps out to max_jump_distance, or to the grid's far corner)
#: one bake or tile takes: some 30 M a second here, so about 10 s at most (a 150 m plane at
#: link_spacing 0.001 and max_jump_distance 100000: 2.5 billion probes, 75 s frozen in
#: Blender, no link found; the 10x10 dungeon solo at the defaults: some 5 M). [Units: probes]
MAX_LINK_PROBES = 1 << 28
#: Landings after the first tried in turn, out along a sample's probes, when the first's arc
#: is blocked (`find_tile_links` step 4).
NEXT_LANDINGS = 3
#: Segments of a drawn arc (`arc_points`).
ARC_SEGMENTS = 8


@dataclass
class LinkWindow:
    """A tile's surroundings, for links that land in a neighbouring tile (tiled bakes).

    A tile's own heightfields reach only its border (walkable_radius + 3 cells) past its
    bounds; a link may land up to max_jump_distance away. The window is the tile widened far
    enough for every probe and arc, rasterized on its own grid: ``solid`` its filtered solid
    `Heightfield` (gaps and arc clearance), ``floor`` its `CompactHeightfield` after erosion
    and area volumes (a landing outside the tile: a span with an area; the neighbour's regions
    are not known here). core_min/core_max float64 (2,): the tile's own bounds in plan
    [Units: wu]; probes inside them land on the tile's own regions as in a solo bake.
    """

    solid: Heightfield
    floor: CompactHeightfield
    core_min: np.ndarray
    core_max: np.ndarray

    def inside(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """bool: the points (plan, world) lie in the tile's own bounds (half-open)."""
        lo, hi = self.core_min, self.core_max
        return (x >= lo[0]) & (x < hi[0]) & (y >= lo[1]) & (y < hi[1])


def arc_points(start, end, segments: int = ARC_SEGMENTS) -> np.ndarray:
    """float64 (n, segments + 1, 3): the arc an agent follows along each link, Z-up world.

    A parabola in the vertical plane through start and end, straight in plan, whose highest
    point is a quarter of the horizontal length above the higher end (a 45 degree jump; a drop
    hops forward first, so it clears the ledge it leaves). start, end: float (n, 3) [Units: wu].
    segments [Limit: >= 1].
    """
    start = np.asarray(start, dtype=np.float64).reshape(-1, 3)
    end = np.asarray(end, dtype=np.float64).reshape(-1, 3)
    t = np.linspace(0.0, 1.0, int(segments) + 1)
    return _arc(start, end, t)


def link_arc_mesh(links: OffMeshLinks, segments: int = ARC_SEGMENTS):
    """Every link as an arc of ``segments`` edges, as an edge mesh for the overlay.

    Returns float32 (n * (segments + 1), 3) vertices (Z-up world) [Units: wu], int32
    (n * segments, 2) edges, and bool (n * segments,) two-way flag of each edge's link.
    """
    segments = int(segments)
    n = len(links)
    verts = arc_points(links.start, links.end, segments).reshape(-1, 3).astype(np.float32)
    first = (np.arange(n, dtype=np.int32) * (segments + 1))[:, None]
    a = (first + np.arange(segments, dtype=np.int32)[None, :]).ravel()
    edges = np.stack([a, a + 1], axis=1).astype(np.int32)
    two_way = np.repeat(np.asarray(links.bidirectional, dtype=bool), segments)
    return verts, edges, two_way


def _arc(start: np.ndarray, end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Arc points at parameters t (k,) for every link: float64 (n, k, 3)."""
    horizontal = np.hypot(end[:, 0] - start[:, 0], end[:, 1] - start[:, 1])
    apex = np.maximum(start[:, 2], end[:, 2]) + 0.25 * horizontal
    # z(t) = z0 + b t - c t^2 through both ends, maximum apex: with P = apex - z0 and
    # Q = apex - z1 (both >= 0), b = 2 (P + sqrt(P Q)) and c = b + z0 - z1.
    rise_p = apex - start[:, 2]
    rise_q = apex - end[:, 2]
    b = 2.0 * (rise_p + np.sqrt(rise_p * rise_q))
    c = b + start[:, 2] - end[:, 2]
    out = start[:, None, :] + (end - start)[:, None, :] * t[None, :, None]
    out[:, :, 2] = start[:, None, 2] + b[:, None] * t[None, :] - c[:, None] * t[None, :] ** 2
    return out


def _column_pairs(col_start: np.ndarray, columns: np.ndarray):
    """(query ids, span ids) for every span of every query's column; columns < 0 have none."""
    ok = columns >= 0
    cols = np.where(ok, columns, 0)
    first = col_start[cols]
    counts = np.where(ok, col_start[cols + 1] - first, 0).astype(np.int64)
    total = int(counts.sum())
    query = np.repeat(np.arange(columns.shape[0], dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return query, first[query] + offsets


def _columns(x: np.ndarray, y: np.ndarray, bmin: np.ndarray, cs, width: int, height: int):
    """int64 column ids of world points (x, y); -1 outside the grid."""
    ix = np.floor((x - float(bmin[0])) / float(cs)).astype(np.int64)
    iy = np.floor((y - float(bmin[1])) / float(cs)).astype(np.int64)
    inside = (ix >= 0) & (ix < width) & (iy >= 0) & (iy < height)
    return np.where(inside, ix + iy * width, -1)


def _best_per_query(nqueries: int, query: np.ndarray, value: np.ndarray, key: np.ndarray):
    """Per query, the value of the pair with the smallest key (NaN where a query has none)."""
    out = np.full(nqueries, np.nan)
    if query.shape[0] == 0:
        return out
    order = np.lexsort((key, query))
    q = query[order]
    first = np.r_[True, q[1:] != q[:-1]]
    out[q[first]] = value[order][first]
    return out


def boundary_edges(
    pmesh: PolyMesh, portals: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The navmesh's boundary edges: no neighbour polygon; with ``portals`` also a tile's
    border edges (Recast's ``0x8000 | dir``), which Detour may or may not connect.

    Returns float64 (e, 3) edge start, float64 (e, 3) edge end (Z-up world, polygon heights)
    [Units: wu], and float64 (e, 2) unit outward normal in plan (away from the polygon).
    """
    a, b, normal, _portal = _edges_out(pmesh, portals)
    return a, b, normal


def _edges_out(pmesh: PolyMesh, portals: bool):
    """`boundary_edges` and bool (e,): the edge is a tile's border edge (a portal)."""
    nvp = int(pmesh.nvp)
    polys = np.asarray(pmesh.polys, dtype=np.int64)
    ids = polys[:, :nvp]
    neighbours = polys[:, nvp : 2 * nvp]
    counts = (ids != MESH_NULL_IDX).sum(axis=1)
    slot = np.arange(nvp)[None, :]
    valid = slot < counts[:, None]
    boundary = valid & (neighbours == MESH_NULL_IDX)
    portal = valid & (neighbours != MESH_NULL_IDX) & ((neighbours & _PORTAL) != 0)
    if portals:
        boundary |= portal
    poly, edge = np.nonzero(boundary)
    following = (edge + 1) % counts[poly]
    verts = pmesh.world_verts().astype(np.float64)
    a = verts[ids[poly, edge]]
    b = verts[ids[poly, following]]
    safe_ids = np.where(valid, ids, 0)
    centroid = (verts[safe_ids][:, :, :2] * valid[:, :, None]).sum(axis=1) / np.maximum(counts, 1)[
        :, None
    ]
    direction = b[:, :2] - a[:, :2]
    length = np.hypot(direction[:, 0], direction[:, 1])
    normal = (
        np.stack([direction[:, 1], -direction[:, 0]], axis=1) / np.maximum(length, 1e-12)[:, None]
    )
    middle = 0.5 * (a[:, :2] + b[:, :2])
    outward = ((middle - centroid[poly]) * normal).sum(axis=1) >= 0.0
    normal = np.where(outward[:, None], normal, -normal)
    keep = length > 0.0
    return a[keep], b[keep], normal[keep], portal[poly, edge][keep]


def link_settings(config, derived) -> dict:
    """`find_auto_links`' agent and link keywords from a `NavConfig` and its derived voxel
    settings (climb and height in whole cells, as the navmesh has them)."""
    return {
        "agent_height": float(derived.walkable_height * derived.ch),
        "agent_radius": float(np.float32(config.agent_radius)),
        "agent_climb": float(derived.walkable_climb * derived.ch),
        "max_drop": float(np.float32(config.max_drop)),
        "max_jump_distance": float(np.float32(config.max_jump_distance)),
        "spacing": float(np.float32(config.link_spacing)),
    }


def find_auto_links(
    pmesh: PolyMesh,
    detail: PolyMeshDetail | None,
    chf: CompactHeightfield,
    hf: Heightfield,
    *,
    agent_height: float,
    agent_radius: float,
    agent_climb: float,
    max_drop: float,
    max_jump_distance: float,
    spacing: float,
    window: LinkWindow | None = None,
) -> OffMeshLinks:
    """Jump and drop links of one solo bake (the module docstring's rule).

    With ``window`` (a tile of a tiled bake; ``chf``/``hf`` the tile's own): see
    `find_tile_links`, whose links this returns.

    agent_height [Units: wu] [Limit: > 0]; agent_radius [Units: wu] [Limit: >= 0];
    agent_climb [Units: wu] [Limit: >= 0] (the navmesh's, i.e. whole cell heights);
    max_drop: deepest drop [Units: wu] [Limit: >= 0]; max_jump_distance: longest horizontal
    reach of a link, from the navmesh edge to where it lands [Units: wu] [Limit: >= 0];
    spacing: distance between links along an edge [Units: wu] [Limit: > 0; at most
    `MAX_LINK_SAMPLES` samples, about total edge length / spacing, else `VoxNavError`].
    """
    links, _across = find_tile_links(
        pmesh, detail, chf, hf, agent_height=agent_height, agent_radius=agent_radius,
        agent_climb=agent_climb, max_drop=max_drop, max_jump_distance=max_jump_distance,
        spacing=spacing, window=window,
    )  # fmt: skip
    return links


def _probes_per_sample(max_jump_distance: float, step: float, grid) -> int:
    """Probe points out from each sample: every ``step`` to ``max_jump_distance``, but none
    past ``grid``'s far corner (no span there: a max_jump_distance of 100 km probed every
    step of it, nav_test 11.7 s against 0.5 s). [Units: step and distance wu]"""
    nprobes = max(1, int(np.floor(max_jump_distance / step + 1e-9)))
    reach = float(np.hypot(grid.width, grid.height)) * float(grid.cs)
    return min(nprobes, int(np.ceil(reach / step)) + 1)


def link_work(pmesh: PolyMesh, chf: CompactHeightfield, spacing: float, max_jump_distance: float):
    """(samples, probe points) `find_auto_links` would take on a solo navmesh (0, 0 when it
    finds none to take): what its memory grows with (`core.memory.estimate_links`)."""
    a, b, _normal, _portal = _edges_out(pmesh, portals=False)
    if a.shape[0] == 0 or max_jump_distance <= 0 or not spacing > 0:
        return 0, 0
    length = np.hypot(b[:, 0] - a[:, 0], b[:, 1] - a[:, 1])
    samples = int(np.maximum(1, np.floor(length / spacing + 1e-9)).sum())
    step = STEP_CELLS * float(chf.cs)
    return samples, samples * _probes_per_sample(max_jump_distance, step, chf)


def find_tile_links(
    pmesh: PolyMesh,
    detail: PolyMeshDetail | None,
    chf: CompactHeightfield,
    hf: Heightfield,
    *,
    agent_height: float,
    agent_radius: float,
    agent_climb: float,
    max_drop: float,
    max_jump_distance: float,
    spacing: float,
    window: LinkWindow | None = None,
) -> tuple[OffMeshLinks, np.ndarray]:
    """`find_auto_links`, and float64 (n, 2) per link: the outward normal (plan) of the tile
    border edge it starts on, NaN for any other edge.

    With ``window`` (a tile of a tiled bake; ``chf``/``hf`` the tile's own): gaps and arc
    clearance are read from the window's solid heightfield, and probes outside the tile land
    on the window's floor; their end's connection is then the caller's to check on the
    assembled navmesh (`connects_on`), since the neighbour tile holds it. Links also start
    on the tile's border edges (portals): a ledge or gap may run along the border. Where the
    neighbour's navmesh goes on across such an edge a solo bake has no edge there, and the
    probes, which measure a gap from the edge's height, would take a slope running across
    the border for a drop: that is the caller's to check on the assembled navmesh too
    (`core.tiles.check_link_landings`, with the normals returned). Near-identical links
    (step 6) keep the others before those starting on a border edge.

    Units and limits as `find_auto_links`.
    """
    settings = {
        "agent_height": agent_height, "agent_radius": agent_radius, "agent_climb": agent_climb,
        "max_drop": max_drop, "max_jump_distance": max_jump_distance, "link_spacing": spacing,
    }  # fmt: skip
    for name, value in settings.items():  # NaN or infinity failed deep inside (a bare int())
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not (np.isfinite(number) and number >= 0):
            raise VoxNavError(f"{name} must be a finite number >= 0, got {value!r}")
    if not spacing > 0:
        raise VoxNavError(f"link_spacing must be > 0, got {spacing}")
    cs, ch = float(chf.cs), float(chf.ch)
    radius = max(float(agent_radius), cs)
    # A tile's border edges too: a ledge or gap may run exactly along the border, where
    # Recast makes the edge a portal. Where the neighbour tile's navmesh goes on across the
    # border a solo bake has no edge there: those links go on the assembled navmesh.
    a, b, normal, portal = _edges_out(pmesh, portals=window is not None)
    if a.shape[0] == 0 or max_jump_distance <= 0:
        return OffMeshLinks.empty(), np.zeros((0, 2))

    # 1. Samples along every edge.
    length = np.hypot(b[:, 0] - a[:, 0], b[:, 1] - a[:, 1])
    per_edge = np.maximum(1, np.floor(length / spacing + 1e-9)).astype(np.int64)
    _check_samples(per_edge, length, spacing)
    step = STEP_CELLS * cs
    grid = chf if window is None else window.solid
    nprobes = _probes_per_sample(max_jump_distance, step, grid)
    probes = int(per_edge.sum()) * nprobes
    if probes > MAX_LINK_PROBES:
        raise VoxNavError(
            f"auto links at link_spacing {spacing:g} and max_jump_distance "
            f"{max_jump_distance:g} would probe {probes:,} points ({int(per_edge.sum()):,} "
            f"samples x {nprobes:,} steps of {step:g} m), more than the {MAX_LINK_PROBES:,} a "
            "bake (or tile) takes (about 10 s): raise link_spacing or lower max_jump_distance"
        )
    dist = step * np.arange(1, nprobes + 1, dtype=np.float64)
    # Steps 1-3 a chunk of samples at a time (each sample's floor and landing are its own):
    # only the samples that find a landing are kept, so memory follows the links, not the
    # samples (dungeon at link_spacing 2e-4: 557 -> 290 MiB, 4.3 -> 3.4 s).
    chunk = max(1, CHUNK_PROBES // nprobes)
    ends = np.cumsum(per_edge)
    parts: list[tuple[np.ndarray, ...]] = []
    floored = False
    for lo in range(0, int(ends[-1]), chunk):  # chunks of samples, not single samples
        sample = np.arange(lo, min(lo + chunk, int(ends[-1])), dtype=np.int64)
        edge = np.searchsorted(ends, sample, side="right")
        index = sample - (ends[edge] - per_edge[edge])
        t = (index + 0.5) / per_edge[edge]
        point = a[edge] + (b[edge] - a[edge]) * t[:, None]
        out = normal[edge]
        z0 = _floor_near(chf, point[:, :2] - out * (0.25 * cs), point[:, 2], _region_span,
                         agent_climb + ch)  # fmt: skip
        have = np.isfinite(z0)
        if not have.any():
            continue
        floored = True
        point, out, z0, on_portal = point[have], out[have], z0[have], portal[edge][have]
        # 2.-3. Probes straight out of the polygon.
        found, land_dist, land_z, next_dist, next_z = _first_landing(
            chf, hf, point, out, z0, dist, agent_climb, max_drop, window
        )
        parts.append((point[found], out[found], z0[found], on_portal[found], land_dist, land_z,
                      next_dist, next_z))  # fmt: skip
    if not floored:
        return OffMeshLinks.empty(), np.zeros((0, 2))
    point, out, z0, on_portal, land_dist, land_z, next_dist, next_z = (
        np.concatenate(p) for p in zip(*parts, strict=True)
    )
    start = np.column_stack([point[:, :2], z0])
    end_xy = point[:, :2] + out * land_dist[:, None]
    end = np.column_stack([end_xy, land_z])

    # 4. Clearance along the arc (in chunks of links). With a window, its solid answers for
    # the columns past the tile's heightfield.
    solids = [(hf, None)] if window is None else [(hf, None), (window.solid, hf)]

    def arcs_clear(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        # Each link at its own step count (`link_steps`), links of one count together: a
        # batch-wide count (the longest link's) made a link's answer depend on the others
        # (a tiled bake lost drops a solo one kept, and the other way round).
        counts = link_steps(a, b, step)
        clear = np.ones(a.shape[0], dtype=bool)
        for nsteps in np.unique(counts).tolist():
            group = np.flatnonzero(counts == nsteps)
            per = max(1, CHUNK_PROBES // (6 * nsteps))
            for solid, skip in solids:
                for i in range(0, group.shape[0], per):
                    some = group[i : i + per]
                    clear[some] &= _arc_clear(
                        solid, a[some], b[some], agent_height, float(agent_radius), nsteps, skip
                    )
        return clear

    clear = arcs_clear(start, end)
    # A blocked arc tries the sample's next landings in turn, each round of them checked
    # together: a small agent's first landing off a ledge lies so near its wall that the arc
    # grazes the edge (radius 0.3 at 0.3 m cells: no drop link at all, the floor below
    # unreachable), where one a step or two further out clears.
    for k in range(NEXT_LANDINGS):
        retry = np.flatnonzero(~clear & np.isfinite(next_dist[:, k]))
        if retry.shape[0] == 0:
            continue
        later = np.column_stack(
            [point[retry, :2] + out[retry] * next_dist[retry, k][:, None], next_z[retry, k]]
        )
        ok = arcs_clear(start[retry], later)
        end[retry[ok]] = later[ok]
        clear[retry[ok]] = True
    drop = end[:, 2] < start[:, 2] - agent_climb - 1e-6
    # 5. Both ends connect to the navmesh as Detour connects them.
    nav = _own_navmesh(pmesh, detail, agent_height, agent_radius, agent_climb)
    connects = connects_on(nav, start, radius, agent_climb)
    if window is None:
        connects &= connects_on(nav, end, radius, agent_climb)
    else:  # an end in a neighbour tile is checked on the assembled navmesh
        home = window.inside(end[:, 0], end[:, 1])
        connects[home] &= connects_on(nav, end[home], radius, agent_climb)
    keep = clear & connects
    start, end, drop = start[keep], end[keep], drop[keep]
    across = np.where(on_portal[:, None], out, np.nan)[keep]
    # 6. Near-identical links: of a pair, the later one goes, a border edge's after the
    # others (it may go on the assembled navmesh; it must not have cost another link).
    order = np.argsort(on_portal[keep], kind="stable")
    unique = np.empty(order.shape[0], dtype=bool)
    unique[order] = _dedup(start[order], end[order], ~drop[order], spacing)
    start, end, drop, across = start[unique], end[unique], drop[unique], across[unique]
    return OffMeshLinks.create(start, end, radius, bidirectional=~drop), across


def _check_samples(per_edge: np.ndarray, length: np.ndarray, spacing: float) -> None:
    """Refuse (`VoxNavError`) more than `MAX_LINK_SAMPLES` samples, ``per_edge`` int64 (e,)
    of edges ``length`` float64 (e,) [Units: wu], saying the smallest link_spacing that fits."""
    total = int(per_edge.sum())
    if total <= MAX_LINK_SAMPLES:
        return
    edges = int(per_edge.shape[0])
    room = MAX_LINK_SAMPLES - edges
    fits = (
        f"use link_spacing >= {round_up(float(length.sum()) / room * 1.01):g}"
        if room > 0
        else "bake a smaller region with bounds_min/bounds_max"
    )
    raise VoxNavError(
        f"auto links at link_spacing {spacing:g} would take {total:,} samples along "
        f"{edges:,} navmesh edges ({float(length.sum()):,.6g} m), more than the "
        f"{MAX_LINK_SAMPLES:,} a bake (or tile) takes (each may become a link): {fits}, "
        "or turn auto_links off"
    )


def _first_landing(
    chf: CompactHeightfield,
    hf: Heightfield,
    point: np.ndarray,
    out: np.ndarray,
    z0: np.ndarray,
    dist: np.ndarray,
    agent_climb: float,
    max_drop: float,
    window: LinkWindow | None = None,
):
    """Steps 2-3 for some samples: bool (s,) a landing was found; for those, its horizontal
    distance (float64) and floor height (float64) [Units: wu]. With ``window``: gaps from its
    solid heightfield, landings outside the tile on its floor (see `find_auto_links`)."""
    nsamples, nprobes = point.shape[0], dist.shape[0]
    px = (point[:, None, 0] + out[:, None, 0] * dist[None, :]).ravel()
    py = (point[:, None, 1] + out[:, None, 1] * dist[None, :]).ravel()
    pz = np.repeat(z0, nprobes)
    pcols = _columns(px, py, hf.bmin, hf.cs, hf.width, hf.height)
    gap = ~_ground_near(hf, pcols, pz, agent_climb)
    if window is not None:  # probes past the tile's heightfield: the window's solid
        beyond = pcols < 0
        solid = window.solid
        far = _columns(px[beyond], py[beyond], solid.bmin, solid.cs, solid.width, solid.height)
        gap[beyond] = ~_ground_near(solid, far, pz[beyond], agent_climb)
    own = _columns(px, py, chf.bmin, chf.cs, chf.width, chf.height)
    landing_z = _landing_heights(chf, own, _region_span, pz, agent_climb, max_drop)
    if window is not None:
        away = ~window.inside(px, py)
        floor = window.floor
        far = _columns(px[away], py[away], floor.bmin, floor.cs, floor.width, floor.height)
        landing_z[away] = _landing_heights(floor, far, _area_span, pz[away], agent_climb, max_drop)
    gap = gap.reshape(nsamples, nprobes)
    landing_z = landing_z.reshape(nsamples, nprobes)
    gap_before = np.zeros_like(gap)
    gap_before[:, 1:] = np.logical_or.accumulate(gap, axis=1)[:, :-1]
    landing = np.isfinite(landing_z) & gap_before
    found = landing.any(axis=1)
    first = np.argmax(landing, axis=1)[found]
    # The next landings out of each found sample's (`NEXT_LANDINGS`): tried in turn where
    # the first one's arc is blocked. float64 (found, NEXT_LANDINGS) each, NaN for none.
    rank = np.cumsum(landing[found], axis=1)
    next_dist = np.full((first.shape[0], NEXT_LANDINGS), np.nan)
    next_z = np.full((first.shape[0], NEXT_LANDINGS), np.nan)
    rows, cols = np.nonzero(landing[found] & (rank >= 2) & (rank <= NEXT_LANDINGS + 1))
    slot = rank[rows, cols] - 2
    next_dist[rows, slot] = dist[cols]
    next_z[rows, slot] = landing_z[found][rows, cols]
    return found, dist[first], landing_z[found, first], next_dist, next_z


def _floor_near(chf: CompactHeightfield, xy: np.ndarray, z: np.ndarray, is_floor, reach: float):
    """float64 per point: the floor span (``is_floor(chf, spans)``) of its column nearest
    its height z, if within ``reach`` of it [Units: wu]; NaN where there is none. xy float64
    (n, 2) plan points, z (n,) [Units: wu]."""
    cols = _columns(xy[:, 0], xy[:, 1], chf.bmin, chf.cs, chf.width, chf.height)
    q, span = _column_pairs(chf.cell_start, cols)
    floor = float(chf.bmin[2]) + chf.y[span].astype(np.float64) * float(chf.ch)
    gap = np.abs(floor - z[q])
    near = is_floor(chf, span) & (gap <= reach + 1e-6)
    return _best_per_query(xy.shape[0], q[near], floor[near], gap[near])


def _ground_near(hf: Heightfield, columns: np.ndarray, pz: np.ndarray, agent_climb: float):
    """bool per probe: its column has a solid span top within climb of pz [Units: wu]."""
    q, span = _column_pairs(hf.col_start, columns)
    top = float(hf.bmin[2]) + hf.smax[span].astype(np.float64) * float(hf.ch)
    near = np.abs(top - pz[q]) <= agent_climb + 1e-6
    return np.bincount(q[near], minlength=columns.shape[0]) > 0


def _landing_heights(chf, columns, is_floor, pz, agent_climb: float, max_drop: float):
    """float64 per probe: the highest floor span of its column (``is_floor(chf, spans)``)
    from ``max_drop`` below to climb above pz [Units: wu]; NaN where there is none."""
    q, span = _column_pairs(chf.cell_start, columns)
    floor = float(chf.bmin[2]) + chf.y[span].astype(np.float64) * float(chf.ch)
    usable = (
        is_floor(chf, span)
        & (floor >= pz[q] - max_drop - 1e-6)
        & (floor <= pz[q] + agent_climb + 1e-6)
    )
    return _best_per_query(columns.shape[0], q[usable], floor[usable], -floor[usable])


def _area_span(chf: CompactHeightfield, span: np.ndarray) -> np.ndarray:
    """bool: the compact spans are walkable after erosion (a window's floor)."""
    return chf.area[span] != 0


def _region_span(chf: CompactHeightfield, span: np.ndarray) -> np.ndarray:
    """bool: the compact spans are navmesh floor (a region that is not a tile border)."""
    if chf.reg is None:
        return chf.area[span] != 0
    reg = chf.reg[span].astype(np.int64)
    return (reg != 0) & ((reg & _BORDER_REG) == 0)


def _arc_steps(start: np.ndarray, end: np.ndarray, step: float) -> int:
    """The most arc steps of any link (`link_steps`); 2 for none."""
    if start.shape[0] == 0:
        return 2
    return int(link_steps(start, end, step).max())


def link_steps(start: np.ndarray, end: np.ndarray, step: float) -> np.ndarray:
    """int64 (n,): each link's arc steps, its horizontal length over ``step``, + 1 (at least
    2). [Units: step in wu]"""
    horizontal = np.hypot(end[:, 0] - start[:, 0], end[:, 1] - start[:, 1])
    return np.maximum(2, np.ceil(horizontal / step).astype(np.int64) + 1)


def _arc_clear(
    hf: Heightfield,
    start: np.ndarray,
    end: np.ndarray,
    agent_height: float,
    agent_radius: float,
    nsteps: int,
    skip: Heightfield | None = None,
) -> np.ndarray:
    """bool (n,): no solid span meets the agent swept along each link's arc.

    The agent is three upright lines: its centre and its sides (``agent_radius`` either side,
    across the link in plan). ``nsteps`` arc steps (`_arc_steps`: at most a step apart
    horizontally); between two steps each line's column, from the lower step's height (less
    one cell height of tolerance) to the higher step's height plus the agent's height, is
    checked in both steps' columns and, where the line crosses a column corner between them,
    in the two columns beside that corner (the line may pass through either: a diagonal link
    went through a solid corner column neither step stood in). Columns inside ``skip``'s grid
    are not checked (another heightfield answers for them)."""
    n = start.shape[0]
    if n == 0:
        return np.zeros(0, dtype=bool)
    horizontal = np.hypot(end[:, 0] - start[:, 0], end[:, 1] - start[:, 1])
    t = np.linspace(0.0, 1.0, nsteps + 1)
    arc = _arc(start, end, t)
    ch = float(hf.ch)
    lo = np.minimum(arc[:, :-1, 2], arc[:, 1:, 2]) - float(hf.bmin[2])
    hi = np.maximum(arc[:, :-1, 2], arc[:, 1:, 2]) + agent_height - float(hf.bmin[2])
    # Each segment's band, for its 4 columns: both ends' and the two beside a crossed corner.
    lo_cells = np.concatenate([lo] * 4, axis=1).ravel() / ch + (1.0 - 1e-6)
    hi_cells = np.concatenate([hi] * 4, axis=1).ravel() / ch
    across = np.stack([start[:, 1] - end[:, 1], end[:, 0] - start[:, 0]], axis=1)
    across /= np.maximum(horizontal, 1e-12)[:, None]
    blocked = np.zeros(n, dtype=bool)
    for side in (0.0, -1.0, 1.0):  # the agent's centre line, then its two sides
        x = arc[:, :, 0] + side * agent_radius * across[:, None, 0]
        y = arc[:, :, 1] + side * agent_radius * across[:, None, 1]
        # The corner columns: one end's x with the other's y, and the other way round (the
        # same as the ends' own where the segment stays in one row or column).
        xs = np.concatenate([x[:, :-1], x[:, 1:], x[:, 1:], x[:, :-1]], axis=1)
        ys = np.concatenate([y[:, :-1], y[:, 1:], y[:, :-1], y[:, 1:]], axis=1)
        cols = _columns(xs.ravel(), ys.ravel(), hf.bmin, hf.cs, hf.width, hf.height)
        if skip is not None:
            theirs = _columns(xs.ravel(), ys.ravel(), skip.bmin, skip.cs, skip.width, skip.height)
            cols[theirs >= 0] = -1
        q, span = _column_pairs(hf.col_start, cols)
        hit = (hf.smin[span].astype(np.float64) < hi_cells[q]) & (
            hf.smax[span].astype(np.float64) > lo_cells[q]
        )
        blocked |= np.bincount(q[hit], minlength=cols.shape[0]).reshape(n, -1).any(axis=1)
    return ~blocked


def _own_navmesh(
    pmesh: PolyMesh,
    detail: PolyMeshDetail | None,
    agent_height: float,
    agent_radius: float,
    agent_climb: float,
):
    """The bake's polygons as a one-tile Detour navmesh (for `connects_on`)."""
    from .nav.navdata import create_nav_mesh_data
    from .nav.navmesh import NavMesh

    return NavMesh.from_data(
        create_nav_mesh_data(
            pmesh,
            detail,
            walkable_height=float(np.float32(agent_height)),
            walkable_radius=float(np.float32(agent_radius)),
            walkable_climb=float(np.float32(agent_climb)),
        )
    )


def connects_on(nav, points: np.ndarray, radius: float, agent_climb: float) -> np.ndarray:
    """bool (n,): Detour connects a link end at each point (Z-up world, float64 (n, 3)) on
    the `core.nav.navmesh.NavMesh` ``nav``: its nearest polygon within (radius, climb,
    radius) exists and is within ``radius`` horizontally (dtNavMesh's rule for off-mesh
    connections). radius, agent_climb [Units: wu]."""
    # The batch query's candidate grid pays for itself over many queries per polygon; link
    # ends are a few per boundary edge, so the pruned per-query search is faster here.
    from .nav.batch import _find_nearest_poly_pruned as find_nearest_poly

    if points.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    f32 = np.float32
    centres = points[:, [0, 2, 1]].astype(f32)
    halves = np.tile(np.array([radius, agent_climb, radius], dtype=f32), (points.shape[0], 1))
    ref, nearest, _over = find_nearest_poly(nav, centres, halves, np.ones(nav.poly_count, bool))
    dx = nearest[:, 0].astype(np.float64) - centres[:, 0]
    dz = nearest[:, 2].astype(np.float64) - centres[:, 2]
    with np.errstate(invalid="ignore"):
        return (ref >= 0) & (dx * dx + dz * dz <= radius * radius * (1 + 1e-6))


def _dedup(start: np.ndarray, end: np.ndarray, bidir: np.ndarray, spacing: float) -> np.ndarray:
    """bool (n,): links kept after dropping, of every pair in the same direction (headings
    in plan less than 90 degrees apart) and kind whose starts and ends are both closer than
    ``spacing``, the later one."""
    n = start.shape[0]
    keep = np.ones(n, dtype=bool)
    if n < 2:
        return keep
    cell = np.floor(start[:, :2] / spacing).astype(np.int64)
    cell -= cell.min(axis=0)
    span_x = int(cell[:, 0].max()) + 3
    key = (cell[:, 0] + 1) + (cell[:, 1] + 1) * span_x
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    firsts, seconds = [], []
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            # Nine fixed neighbour offsets (not a loop over links).
            target = key + dx + dy * span_x
            lo = np.searchsorted(sorted_key, target, side="left")
            hi = np.searchsorted(sorted_key, target, side="right")
            counts = hi - lo
            i = np.repeat(np.arange(n), counts)
            j = order[np.repeat(lo, counts) + _local_offsets(counts)]
            firsts.append(i)
            seconds.append(j)
    i = np.concatenate(firsts)
    j = np.concatenate(seconds)
    later = j > i
    i, j = i[later], j[later]
    # Same direction too: a short jump and its reverse from the other side of the gap have
    # close starts and ends (each other's), and one side lost its links.
    heading = end[:, :2] - start[:, :2]
    close = (
        (np.linalg.norm(start[i] - start[j], axis=1) < spacing)
        & (np.linalg.norm(end[i] - end[j], axis=1) < spacing)
        & (bidir[i] == bidir[j])
        & ((heading[i] * heading[j]).sum(axis=1) > 0)
    )
    keep[j[close]] = False
    return keep


def _local_offsets(counts: np.ndarray) -> np.ndarray:
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
