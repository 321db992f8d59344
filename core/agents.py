"""Several agent sizes in one bake, each navmesh identical to a separate bake with its settings.

An `AgentType` names an agent's radius, height, max climb and max slope. `bake_agents` bakes
one navmesh per agent, exactly what `core.pipeline.bake` gives with that agent's four settings
put into the config, but runs each pipeline stage once per distinct input:

    stage          depends on (besides the triangles and the shared settings)
    mark           max slope
    rasterize      the marked triangle areas (max slope) and walkable_climb
    filters        + walkable_height (and walkable_climb)
    compact        + walkable_height and walkable_climb (the filtered heightfield)
    erode          the boundary distance: once per compact heightfield; its threshold at
                   2 * walkable_radius per agent (`area.erosion_distance`)
    distance on    per agent (distance field, regions, contours, polygons, detail); in one
                   process, agents sharing a compact heightfield compute their distance
                   fields together (one pass of the chamfer's row loop for all of them),
                   their watershed regions together (one watershed over their union, while
                   small) and their detail meshes together (one patch flood and insertion
                   rounds for all), and all agents' contours are ear-clipped together (one
                   round for all)

Keys are the voxel-unit integers Recast derives (`NavConfig.derived`), so two agents whose
climbs differ by less than a cell height share rasterization, as their separate bakes would
produce identical arrays anyway. Agents differing only in radius (small/medium/large NPCs)
share everything up to the compact heightfield and erosion's distance.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import itertools
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

from . import area, limits, memory, pipeline, rasterize, threads
from .compact import CompactHeightfield
from .config import DerivedConfig, NavConfig, did_you_mean, grid_size
from .context import BuildContext
from .contours import build_contours_many
from .detail import build_poly_mesh_details, detail_frame
from .errors import VoxNavError
from .heightfield import Heightfield
from .polymesh import build_poly_meshes
from .regions import build_distance_fields, build_regions_together

T = TypeVar("T")

#: The agent spec keys (``--agent NAME:radius=..,height=..``) -> NavConfig settings.
AGENT_KEYS = {
    "radius": "agent_radius",
    "height": "agent_height",
    "max_climb": "agent_max_climb",
    "max_slope": "agent_max_slope",
}
#: An agent name: letters, digits, ``_`` and ``-`` (it becomes part of file and object names).
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,63}$")


def agent_output(path, name: str) -> str:
    """``navmesh.obj`` -> ``navmesh_NAME.obj``: an agent's output file beside the given path
    (every export and query with several agents names its files so)."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}_{name}{p.suffix}"))


def _agent_field(setting: str):
    return field(default=NavConfig.default(setting), metadata={"doc": NavConfig.doc(setting)})


@dataclass(frozen=True)
class AgentType:
    """One agent size. Each field's ``metadata["doc"]`` is the NavConfig setting's `SettingDoc`.

    ``name``: letters, digits, ``_``, ``-`` (1..63 characters). ``radius`` [Units: wu]
    [Limit: 0..1e5]; ``height`` [Units: wu] [Limit: > 0, >= 3 cell heights]; ``max_climb``
    [Units: wu] [Limit: 0..1e5]; ``max_slope`` [Units: degrees] [Limit: 0..90, 90 excluded].
    Defaults are NavConfig's (RecastDemo's).
    """

    name: str
    radius: float = _agent_field("agent_radius")
    height: float = _agent_field("agent_height")
    max_climb: float = _agent_field("agent_max_climb")
    max_slope: float = _agent_field("agent_max_slope")

    def settings(self) -> dict[str, float]:
        """This agent's NavConfig settings: ``{"agent_radius": ..., ...}``."""
        return {setting: getattr(self, key) for key, setting in AGENT_KEYS.items()}

    def config(self, base: NavConfig) -> NavConfig:
        """``base`` with this agent's four settings, validated (`VoxNavError` names the agent)."""
        self._check_name()
        try:
            return base.replace(**self.settings()).validate()
        except VoxNavError as exc:
            raise VoxNavError(f"agent {self.name!r}: {exc}") from None

    def validate(self, base: NavConfig | None = None) -> AgentType:
        """Check the name and every setting as NavConfig does (with ``base``'s cell sizes, as
        the height must be at least 3 cell heights). Returns self."""
        self.config(base or NavConfig())
        return self

    def _check_name(self) -> None:
        if not isinstance(self.name, str) or not NAME_PATTERN.fullmatch(self.name):
            raise VoxNavError(
                f"agent name {self.name!r} must be 1 to 63 letters, digits, '_' or '-' (it "
                "becomes part of output file and object names)"
            )


def parse_agent_spec(text: str, base: NavConfig | None = None) -> AgentType:
    """An `AgentType` from ``NAME:key=value,key=value`` (keys radius, height, max_climb,
    max_slope; an omitted key takes ``base``'s value). Validated against ``base``; raises
    `VoxNavError` saying what is wrong with the spec."""
    base = base or NavConfig()
    name, sep, rest = str(text).partition(":")
    name = name.strip()
    values: dict[str, float] = {
        key: float(getattr(base, setting)) for key, setting in AGENT_KEYS.items()
    }
    if not sep and "=" in name:
        raise VoxNavError(
            f"agent spec {text!r} has no name: write NAME:radius=..,height=.. "
            "(e.g. small:radius=0.3,height=1.8)"
        )
    seen: set[str] = set()
    for part in rest.split(",") if rest.strip() else []:
        key, eq, value = part.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not eq:
            raise VoxNavError(
                f"agent {name!r}: {part.strip()!r} is not key=value (keys: {', '.join(AGENT_KEYS)})"
            )
        if key not in AGENT_KEYS:
            raise VoxNavError(
                f"agent {name!r}: unknown key {key!r}{did_you_mean(key, AGENT_KEYS)}; keys: "
                f"{', '.join(AGENT_KEYS)}"
            )
        if key in seen:
            raise VoxNavError(f"agent {name!r}: {key} is given twice")
        seen.add(key)
        try:
            number = float(value.strip())
        except ValueError:
            raise VoxNavError(
                f"agent {name!r}: {key} must be a number, got {value.strip()!r}"
            ) from None
        values[key] = number
    return AgentType(name, **values).validate(base)


def check_agents(agents, base: NavConfig) -> list[tuple[AgentType, NavConfig]]:
    """Each agent with its validated config; `VoxNavError` for an empty list, a bad agent or
    two agents of the same name (or names differing only in letter case)."""
    agents = list(agents)
    if not agents:
        raise VoxNavError("give at least one agent")
    seen: dict[str, str] = {}  # by the name in lower case: file names on Windows and macOS
    out = []
    for agent in agents:
        if not isinstance(agent, AgentType):
            raise VoxNavError(f"agents must be AgentType values, got {type(agent).__name__}")
        other = seen.get(agent.name.lower())
        if other == agent.name:
            raise VoxNavError(f"two agents are named {agent.name!r}: give every agent its own name")
        if other is not None:
            raise VoxNavError(
                f"agents {other!r} and {agent.name!r} differ only in letter case: their files "
                f"({agent_output('navmesh.obj', other)}, {agent_output('navmesh.obj', agent.name)}"
                ") would be one file on Windows and macOS disks; rename one"
            )
        seen[agent.name.lower()] = agent.name
        config = agent.config(base)
        try:  # the agent's own fields against Recast's 8-bit limits, before any stage runs
            limits.check_agent_fields(config, config.derived(), None)
        except VoxNavError as exc:
            raise VoxNavError(f"agent {agent.name!r}: {exc}") from None
        out.append((agent, config))
    return out


@dataclass
class _Recorded:
    """A shared stage's result with the warnings, timings and memory estimates it recorded,
    replayed into every agent's context that uses it."""

    value: object
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    estimates: dict[str, int] = field(default_factory=dict)

    def replay(self, ctx: BuildContext, estimates: dict[str, int]) -> object:
        for message in self.warnings:
            ctx.warn(message)
        for name, seconds in self.timings.items():
            ctx.add_time(name, seconds)
        estimates.update(self.estimates)
        return self.value


#: The compact heightfield's span layout and links: no stage after compaction modifies them.
_LAYOUT_FIELDS = ("cell_start", "y", "h", "con", "neighbor", "span_x", "span_y", "bmin", "bmax")


def _frozen_layout(chf: CompactHeightfield) -> dict[str, np.ndarray]:
    """Read-only views of ``chf``'s layout arrays, to be shared by every agent's copy: a write
    through one raises instead of reaching the other agents, and the distance field's pass
    plans (cached by these very array objects) are built once for all agents."""
    frozen = {}
    for name in _LAYOUT_FIELDS:
        view = getattr(chf, name).view()
        view.flags.writeable = False
        frozen[name] = view
    return frozen


def _copy_compact(chf: CompactHeightfield, frozen: dict[str, np.ndarray]) -> CompactHeightfield:
    """A compact heightfield whose writable arrays are its own (the later stages assign new
    areas, distances and regions) and whose layout is ``frozen`` (`_frozen_layout` of
    ``chf``: read-only views shared with the other agents)."""
    changes: dict[str, Any] = {
        f.name: frozen[f.name] if f.name in frozen else getattr(chf, f.name).copy()
        for f in dataclasses.fields(chf)
        if isinstance(getattr(chf, f.name), np.ndarray)
    }
    return dataclasses.replace(chf, **changes)


#: The fields of a `BakeResult` an agent's tail sets (sent back from a worker).
_TAIL_FIELDS = (
    "area_initial", "dist_raw", "compact", "contours", "polymesh", "detail",
    "offmesh_links", "auto_link_count",
)  # fmt: skip
#: Spans of all agents' compact heightfields together up to which agents sharing one layout
#: compute their distance fields at once (`regions.build_distance_fields`): the chamfer's row
#: loop is most of that stage, and three fields take about half the time of three calls on
#: dungeon (52k spans) and two thirds on its 4x4 tiling (377k: 57 against 89 ms). The batch
#: holds about 32 bytes per span and field at once: at most 64 MiB here.
DISTANCE_BATCH_SPANS = 1 << 21
#: Contour vertices of all agents together up to which their polygon meshes are ear-clipped at
#: once (`polymesh.build_poly_meshes`: the clipping rounds are that stage's time on small
#: levels; the first round's temporaries grow with the vertices).
POLYMESH_BATCH_VERTICES = 1 << 16
#: Polygons of all agents together up to which agents sharing one layout build their detail
#: meshes at once (`detail.build_poly_mesh_details`: the patch flood's and the insertion
#: rounds' per-call work is most of that stage on small levels). The per-polygon arrays grow
#: with the polygons (the height patches go in bounded chunks either way).
DETAIL_BATCH_POLYGONS = 1 << 15


@dataclass
class _OpenAgent:
    """One agent's tail between its stages: its bake (`pipeline.OpenBake`) and the hand-made
    links it started with."""

    bake: pipeline.OpenBake
    hand_links: Any


def _agent_tails(jobs: list) -> list:
    """Each job's agent stages from erosion's threshold on, in this process (a top-level
    function, so a process pool can run it). A job is (result, derived, volumes, inputs,
    compact heightfield, erosion distance); its compact heightfield is taken over. Returns
    per job the result fields set, the stage timings, warnings and memory estimates.

    The distance fields, regions, contours, polygon meshes and detail meshes are built
    together where agents share what those stages read (`_distances_together`,
    `_regions_together`, `_contours_together`, `_poly_meshes_together`, `_details_together`);
    the other stages run agent by agent."""
    agents = []
    for result, derived, volumes, inputs, chf, erosion_dist in jobs:
        hand_links = result.offmesh_links
        bake = pipeline.open_stages(
            result, derived, volumes, BuildContext(), {}, inputs, chf, erosion_dist
        )
        agents.append(_OpenAgent(bake, hand_links))
    for agent, distance in zip(agents, _distances_together(agents), strict=True):
        agent.bake.distance_stage(distance)
    for agent, regions in zip(agents, _regions_together(agents), strict=True):
        agent.bake.regions_stage(regions)
    for agent, contours in zip(agents, _contours_together(agents), strict=True):
        agent.bake.contours_stage(contours)
    _poly_meshes_together(agents)
    details = _details_together(agents)
    outputs = []
    for agent, detail in zip(agents, details, strict=True):
        bake = agent.bake
        bake.detail_stages(detail)
        pipeline.warn_unplaced_links(bake.result, agent.hand_links, bake.ctx)
        fields_set = {n: getattr(bake.result, n) for n in _TAIL_FIELDS}
        outputs.append((fields_set, bake.ctx.timings, bake.ctx.warnings, bake.estimates))
    return outputs


def _bounded_runs(members: list[T], sizes: list[int], bound: int) -> list[list[T]]:
    """``members`` in order, cut into runs whose ``sizes`` add up to at most ``bound`` (a
    member larger than the bound makes a run of its own)."""
    runs: list[list[T]] = [[]]
    total = 0
    for member, size in zip(members, sizes, strict=True):
        if runs[-1] and total + size > bound:
            runs.append([])
            total = 0
        runs[-1].append(member)
        total += size
    return runs


def _distances_together(agents: list[_OpenAgent]) -> list[Any]:
    """The distance fields of the agents whose compact heightfields share one layout
    (`_frozen_layout`), at most `DISTANCE_BATCH_SPANS` spans together, computed at once
    (`regions.build_distance_fields`), each recording an equal share of that time as its
    "distance" stage. Returns per agent its distance field, or None for the agents left to
    compute theirs alone."""
    distances: list[Any] = [None] * len(agents)
    same_layout: dict[int, list[int]] = {}
    for i, agent in enumerate(agents):
        same_layout.setdefault(id(agent.bake.chf.neighbor), []).append(i)
    for members in same_layout.values():
        sizes = [int(agents[i].bake.chf.y.shape[0]) for i in members]
        for batch in _bounded_runs(members, sizes, DISTANCE_BATCH_SPANS):
            if len(batch) < 2:
                continue
            start = time.perf_counter()
            fields = build_distance_fields(
                agents[batch[0]].bake.chf, [agents[i].bake.chf.area for i in batch]
            )
            share = (time.perf_counter() - start) / len(batch)
            for i, distance in zip(batch, fields, strict=True):
                distances[i] = distance
                agents[i].bake.ctx.add_time("distance", share)
    return distances


def _regions_together(agents: list[_OpenAgent]) -> list[Any]:
    """The watershed regions of the agents whose compact heightfields share one layout and
    whose region settings are the same, built at once (`regions.build_regions_together`,
    one watershed over their union while it is small), each recording an equal share of that
    time as its "regions" stage. Returns per agent its (reg, max_regions), or None for the
    agents left to partition alone."""
    regions: list[Any] = [None] * len(agents)
    groups: dict[tuple, list[int]] = {}
    for i, agent in enumerate(agents):
        bake = agent.bake
        if bake.result.config.partition != "watershed":
            continue
        key = (
            id(bake.chf.neighbor), int(bake.derived.min_region_area),
            int(bake.derived.merge_region_area),
        )  # fmt: skip
        groups.setdefault(key, []).append(i)
    for batch in groups.values():
        if len(batch) < 2:
            continue
        bakes = [agents[i].bake for i in batch]
        dists: list[np.ndarray] = []
        for bake in bakes:
            assert bake.chf.dist is not None, "the distance stage comes first"
            dists.append(bake.chf.dist)
        start = time.perf_counter()
        built = build_regions_together(
            [bake.chf for bake in bakes],
            dists,
            [int(bake.chf.max_distance) for bake in bakes],
            int(bakes[0].derived.min_region_area),
            int(bakes[0].derived.merge_region_area),
            ctxs=[bake.ctx for bake in bakes],
        )
        share = (time.perf_counter() - start) / len(batch)
        for i, bake, found in zip(batch, bakes, built, strict=True):
            regions[i] = found
            bake.ctx.add_time("regions", share)
    return regions


def _contours_together(agents: list[_OpenAgent]) -> list[Any]:
    """The contours of the agents with the same simplification settings, built at once
    (`contours.build_contours_many`: every outline simplified in one run of rounds), each
    recording an equal share of that time as its "contours" stage. Returns per agent its
    contour set, or None for an agent left to build its own."""
    contours: list[Any] = [None] * len(agents)
    groups: dict[tuple[float, int], list[int]] = {}
    for i, agent in enumerate(agents):
        derived = agent.bake.derived
        key = (float(derived.max_simplification_error), int(derived.max_edge_len))
        groups.setdefault(key, []).append(i)
    for (max_error, max_edge_len), batch in groups.items():
        if len(batch) < 2:
            continue
        start = time.perf_counter()
        built = build_contours_many(
            [agents[i].bake.chf for i in batch], max_error, max_edge_len,
            ctxs=[agents[i].bake.ctx for i in batch],
        )  # fmt: skip
        share = (time.perf_counter() - start) / len(batch)
        for i, found in zip(batch, built, strict=True):
            contours[i] = found
            agents[i].bake.ctx.add_time("contours", share)
    return contours


def _poly_meshes_together(agents: list[_OpenAgent]) -> None:
    """Every agent's polygon mesh from its contours (``result.polymesh``), the agents with the
    same most vertices per polygon, at most `POLYMESH_BATCH_VERTICES` contour vertices
    together, ear-clipped at once (`polymesh.build_poly_meshes`), each recording an equal
    share of that time as its "polymesh" stage."""
    by_nvp: dict[int, list[_OpenAgent]] = {}
    for agent in agents:
        by_nvp.setdefault(int(agent.bake.derived.max_verts_per_poly), []).append(agent)
    for nvp, members in by_nvp.items():
        sizes = [int(agent.bake.contours.nverts.sum()) for agent in members]
        for batch in _bounded_runs(members, sizes, POLYMESH_BATCH_VERTICES):
            start = time.perf_counter()
            meshes = build_poly_meshes([agent.bake.contours for agent in batch], nvp)
            share = (time.perf_counter() - start) / len(batch)
            for agent, mesh in zip(batch, meshes, strict=True):
                agent.bake.result.polymesh = mesh
                agent.bake.ctx.add_time("polymesh", share)


def _details_together(agents: list[_OpenAgent]) -> list[Any]:
    """The detail meshes of the agents whose compact heightfields share one layout and whose
    polygon meshes share a frame and detail settings, at most `DETAIL_BATCH_POLYGONS`
    polygons together, built at once (`detail.build_poly_mesh_details`), each after its own
    memory check and recording an equal share of that time as its "detail" stage. Returns
    per agent its detail mesh, or None for the agents left to build theirs alone."""
    details: list[Any] = [None] * len(agents)
    groups: dict[tuple, list[tuple[int, int]]] = {}
    for i, agent in enumerate(agents):
        bake = agent.bake
        pmesh, derived = bake.result.polymesh, bake.derived
        if pmesh is None or pmesh.npolys == 0:
            continue
        key = (
            id(bake.chf.neighbor), id(bake.chf.y), id(bake.chf.cell_start), detail_frame(pmesh),
            float(derived.detail_sample_dist), float(derived.detail_sample_max_error),
        )  # fmt: skip
        groups.setdefault(key, []).append((i, int(pmesh.npolys)))
    for members in groups.values():
        ids = [i for i, _count in members]
        sizes = [count for _i, count in members]
        for batch in _bounded_runs(ids, sizes, DETAIL_BATCH_POLYGONS):
            if len(batch) < 2:
                continue
            bakes = [agents[i].bake for i in batch]
            for bake in bakes:
                bake.detail_memory_check()
            derived = bakes[0].derived
            start = time.perf_counter()
            built = build_poly_mesh_details(
                [bake.result.polymesh for bake in bakes],
                [bake.chf for bake in bakes],
                float(derived.detail_sample_dist),
                float(derived.detail_sample_max_error),
                ctx=bakes[0].ctx,
            )
            share = (time.perf_counter() - start) / len(batch)
            for i, bake, detail in zip(batch, bakes, built, strict=True):
                details[i] = detail
                bake.ctx.add_time("detail", share)
    return details


#: Spans of the jobs' compact heightfields together (each distinct one counted once) below
#: which the per-agent stages stay in this process even with ``workers`` > 1 or an
#: ``executor``: forking (or pickling to a kept pool) and sending the results back cost about
#: what a second core gives there. Three agents on this machine class, over one bake: dungeon
#: (23.6k spans) 1.47x in one process, 1.51x with a forked worker, 1.47x on a kept pool; its
#: 2x2 tiling (94k) 1.49x / 1.41x / 1.45x; its 4x4 (377k) 1.67x / 1.43x / 1.51x.
PROCESS_MIN_SPANS = 1 << 16
#: `PROCESS_MIN_SPANS` for an ``executor`` kept between bakes: no process starts per bake, so
#: only pickling the jobs and their results is paid. Three agents over one bake, the runs
#: alternated in one process (2026-11-27): nav_test (56.8k spans) 1.80x-1.87x here,
#: 1.43x-1.54x on a kept pool of 2. Dungeon (23.6k) stays here: 1.50x here against 1.39x-1.46x
#: on the pool on a quiet machine, but 1.95x while another process kept the second core busy.
EXECUTOR_MIN_SPANS = 1 << 15

#: The per-agent jobs a forked worker reads from its copy of this process's memory (so the
#: shared heightfields are not pickled to it), by bake: each `_tails_in_processes` call adds
#: its own entry before its pool forks and removes it afterwards, so bakes in several
#: threads at once never read each other's jobs (one global list was swapped under a bake
#: whose workers had not forked yet: an agent came back with the other bake's navmesh).
_FORKED_JOBS: dict[int, list] = {}
_FORKED_LOCK = threading.Lock()
_FORKED_TOKENS = itertools.count()


def _own_compacts(jobs: list, layouts: dict[int, dict[str, np.ndarray]] | None = None) -> list:
    """The jobs, each with its own writable compact arrays over the shared read-only layout
    (`_frozen_layout`, one per distinct compact heightfield, by the id of the job's input
    compact heightfield: taken from ``layouts`` where it has one, else made and added there,
    so the caller can hand the same views to results that come back without them)."""
    layouts = {} if layouts is None else layouts
    return [(*job[:4], _copy_compact(job[4], _layout_of(layouts, job[4])), job[5]) for job in jobs]


def _layout_of(layouts: dict[int, dict[str, np.ndarray]], chf: CompactHeightfield):
    """``layouts``' `_frozen_layout` of ``chf``, made and kept there the first time."""
    if id(chf) not in layouts:
        layouts[id(chf)] = _frozen_layout(chf)
    return layouts[id(chf)]


def _job_cost(job) -> int:
    """The spans an agent's stages work on: its walkable spans after erosion's threshold."""
    _result, derived, _volumes, _inputs, chf, erosion_dist = job
    keep = np.asarray(erosion_dist) >= 2 * int(derived.walkable_radius)
    return int(np.count_nonzero(keep & (chf.area != 0)))


def _agent_groups(costs: list[int], count: int) -> list[list[int]]:
    """Job indices in ``count`` groups (fewer if there are fewer jobs) of about equal work
    (``costs``, per job: `_job_cost`; the costliest job first onto the lightest group), each
    group in job order, the lightest group first: it runs in this process, which also
    unpickles the others' results."""
    count = max(1, min(count, len(costs)))
    groups: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        # Equal loads go to the group with fewer jobs: agents of no work (an empty navmesh)
        # still fill every group, so there are never fewer groups than asked.
        lightest = min(range(count), key=lambda g: (loads[g], len(groups[g])))
        groups[lightest].append(i)
        loads[lightest] += costs[i]
    order = sorted(range(count), key=lambda g: (loads[g], groups[g]))
    return [sorted(groups[g]) for g in order if groups[g]]


def _group_here(jobs: list, layouts: dict[int, dict[str, np.ndarray]]) -> list:
    """`_agent_tails` of ``jobs`` on their own writable copies over ``layouts``, one thread
    per stage (`core.threads`): other processes keep the other cores busy meanwhile."""
    with threads.single_threaded():
        return _agent_tails(_own_compacts(jobs, layouts))


def _group_in_worker(jobs: list) -> list:
    """`_group_here` in a worker process, each compact heightfield returned without its
    layout arrays (the caller has them: later stages never write them)."""
    outputs = _group_here(jobs, {})
    for fields, *_rest in outputs:
        compact = fields["compact"]
        empty = {name: np.zeros(0, dtype=getattr(compact, name).dtype) for name in
                 _LAYOUT_FIELDS}  # fmt: skip
        fields["compact"] = dataclasses.replace(compact, **empty)
    return outputs


@dataclass(frozen=True)
class _SolidCount:
    """All an agent's stages read of the solid heightfield when they make no automatic links:
    its span count (the memory estimates). Pickled to a worker in the heightfield's place."""

    span_count: int


def _for_worker(job):
    """``job`` as pickled to a worker: its result without what the per-agent stages never read
    (the triangle areas, each filter's areas and, unless automatic links read it, the solid
    heightfield; 26 instead of 43 MB for two agents on the 4x4 tiling). The worker sends back only
    the fields its stages set (`_TAIL_FIELDS`), so this process's result keeps them all."""
    result = job[0]
    solid = result.heightfield
    if not result.config.auto_links:
        solid = cast(Heightfield, _SolidCount(solid.span_count))
    lean = dataclasses.replace(
        result, heightfield=solid, stage_areas={}, tri_areas=result.tri_areas[:0]
    )
    return (lean, *job[1:])


def _forked_group(token: int, indices: list[int]) -> list:
    """`_group_in_worker` of those jobs of the bake ``token`` in `_FORKED_JOBS`, in a forked
    worker (its arrays are the worker's own copy-on-write pages: nothing large is pickled to
    it)."""
    jobs = _FORKED_JOBS[token]
    return _group_in_worker([jobs[i] for i in indices])


def _submit_group(executor: cf.Executor, jobs: list, group: list[int], forked: int | None = None):
    """A future of `_group_in_worker`'s outputs for ``group``'s jobs on ``executor``: by their
    indices where its workers were forked holding them (``forked``: the bake's token in
    `_FORKED_JOBS`), else pickled to it (`_for_worker`: a compact heightfield shared by the
    group's agents once)."""
    if forked is not None:
        return executor.submit(_forked_group, forked, group)
    return executor.submit(_group_in_worker, [_for_worker(jobs[i]) for i in group])


def _tails_beside(
    jobs: list,
    groups: list[list[int]],
    executor: cf.Executor,
    failure: str,
    forked: int | None = None,
) -> list:
    """Every job's `_agent_tails` output: ``groups[0]`` in this process while each other
    group runs on ``executor`` (`_submit_group`; a pool kept between bakes, say, or one made
    for the bake). A group whose future fails (or that could not be submitted) runs here
    afterwards, its agents warned ``failure`` and the error. The results' compact
    heightfields get their layouts from this process: shared read-only views, as in one
    process. ``forked``: the bake's token in `_FORKED_JOBS` when the executor's workers fork
    from this process holding the jobs (None: the jobs are pickled to them)."""
    layouts: dict[int, dict[str, np.ndarray]] = {}
    futures: list[cf.Future | None] = []
    for group in groups[1:]:
        try:
            futures.append(_submit_group(executor, jobs, group, forked))
        except Exception:  # refused (a pool shut down, say): run here, below
            futures.append(None)
    try:
        outputs: dict[int, Any] = dict(zip(groups[0], _group_here(
            [jobs[i] for i in groups[0]], layouts), strict=True))  # fmt: skip
        for group, future in zip(groups[1:], futures, strict=True):
            try:
                if future is None:
                    raise RuntimeError("the job was refused")
                done = future.result()
            except Exception as exc:  # the same stages here, only slower
                # Fresh copies: a failing thread may have written into the ones it was given.
                redone = _group_here([jobs[i] for i in group], layouts)
                note = f"{failure} ({type(exc).__name__}: {exc}); this agent's stages ran in "
                note += "this process"
                outputs.update(
                    (i, (fields, timings, [*warnings, note], est))
                    for i, (fields, timings, warnings, est) in zip(group, redone, strict=True)
                )
                continue
            for i, (fields, *rest) in zip(group, done, strict=True):
                layout = _layout_of(layouts, jobs[i][4])
                fields["compact"] = dataclasses.replace(fields["compact"], **layout)
                outputs[i] = (fields, *rest)
        return [outputs[i] for i in range(len(jobs))]
    finally:
        for future in futures:
            if future is not None:
                future.cancel()


def _tails_in_processes(jobs: list, groups: list[list[int]]) -> list:
    """`_tails_beside` with the other groups in a pool of processes made for them. Where the
    platform forks, the workers inherit the jobs (nothing large is sent to them; the results
    come back pickled); elsewhere the jobs are pickled to them."""
    import multiprocessing

    forking = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork") if forking else None
    token = None
    if forking:
        with _FORKED_LOCK:
            token = next(_FORKED_TOKENS)
            _FORKED_JOBS[token] = jobs
    try:
        from .tiles import worker_pool

        with worker_pool(len(groups) - 1, context) as pool:
            return _tails_beside(jobs, groups, pool, "a worker process failed", token)
    finally:
        if token is not None:
            with _FORKED_LOCK:
                _FORKED_JOBS.pop(token, None)


def default_workers() -> int:
    """`bake_agents`' processes for ``workers=None``: every core (`tiles.default_workers`)
    where the platform forks (the workers inherit the heightfields), else 1 (a spawned
    worker imports NumPy and the core first, more than the per-agent stages of most levels
    take)."""
    import multiprocessing

    from . import tiles

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return tiles.default_workers()


def _worth_processes(jobs: list, kept: bool) -> bool:
    """Whether the jobs are large enough for other processes to pay: `EXECUTOR_MIN_SPANS` on
    a pool kept between bakes (``kept``), else `PROCESS_MIN_SPANS`."""
    distinct = {id(job[4]): int(job[4].y.shape[0]) for job in jobs}
    least = EXECUTOR_MIN_SPANS if kept else PROCESS_MIN_SPANS
    return len(jobs) > 1 and sum(distinct.values()) >= least


def bake_agents(
    verts,
    tris,
    config: NavConfig | None,
    agents,
    *,
    ctx: BuildContext | None = None,
    volumes: tuple[pipeline.AreaVolume, ...] = (),
    workers: int | None = 1,
    offmesh_links=None,
    executor: cf.Executor | None = None,
) -> dict[str, pipeline.BakeResult]:
    """One navmesh bake per agent, ``{agent name: BakeResult}`` in the agents' order.

    Each result equals ``pipeline.bake(verts, tris, config.replace(agent_radius=...,
    agent_height=..., agent_max_climb=..., agent_max_slope=...), volumes=volumes)`` array for
    array, with its own warnings and timings (a shared stage's time and warnings appear in every
    agent that used it). verts float32 (n, 3) world Z-up [Units: wu]; tris int (m, 3).
    ``ctx`` (optional) receives progress, the time of each stage actually run (summed over
    runs) and every agent's warnings prefixed with ``agent NAME:``. ``workers``
    [Limit: 1..`limits.MAX_WORKERS`]: processes for the per-agent stages (erosion's
    threshold onwards), this one included:
    with more than one, the agents are cut into that many groups of about equal work, the
    lightest runs here while each other group runs (its agents' stages batched as here) in a
    process forked for the bake; 1 (the default) runs them all in this process, as do
    agents whose compact heightfields are small (`PROCESS_MIN_SPANS`: there the processes
    cost more than they give); None: every core where the platform forks, else 1
    (`default_workers`; the CLI's default). ``offmesh_links``: hand-made
    `core.offmesh.OffMeshLinks` every agent's navmesh gets (as `pipeline.bake`'s).
    ``executor``: a process pool (any `concurrent.futures.Executor`) kept between bakes:
    the groups (``workers`` of them, at least 2) but the one here run on it, their inputs
    pickled to it (no process is started per bake; small levels, under
    `EXECUTOR_MIN_SPANS`, bake here). A group a worker or the executor fails runs here
    afterwards, its agents warned. Raises
    `VoxNavError` for bad input, a bad or duplicate agent, before any stage runs.
    """
    workers = limits.check_workers(default_workers() if workers is None else workers)
    base = (config or NavConfig()).validate(agent_height=False)  # each agent checked whole
    pairs = check_agents(agents, base)
    overall = ctx if ctx is not None else BuildContext()
    for volume in volumes:
        volume.validate()
    verts, tris = pipeline.check_input(verts, tris)
    bmin, bmax = pipeline.grid_bounds(verts, base)
    if not (bmax > bmin).any():
        raise VoxNavError("the geometry has no extent: all vertices are at the same point")
    inputs = memory.input_bytes(verts, tris)
    contexts: dict[str, BuildContext] = {}
    estimates: dict[str, dict[str, int]] = {}
    # The up-front memory prediction reads the cell size and the limit only, which agents
    # share: made once (its fragment bound is a pass over every triangle).
    predicted: dict[tuple[float, int], dict[str, int]] = {}
    for agent, cfg in pairs:  # every agent's checks before any stage runs, as bake does
        actx = BuildContext(stages=pipeline.STAGES)
        derived = cfg.derived()
        limits.check_grid(bmin, bmax, cfg, derived, actx)
        memory_key = (float(cfg.cell_size), int(cfg.memory_limit))
        if memory_key not in predicted:
            predicted[memory_key] = {}
            memory.check_bake(verts, tris, bmin, bmax, cfg, True, predicted[memory_key])
        estimates[agent.name] = dict(predicted[memory_key])
        limits.check_columns(bmin, bmax, cfg)
        limits.check_navmesh_extent(bmin, bmax, cfg)
        limits.check_precision(bmin, bmax, derived, actx)
        contexts[agent.name] = actx
    width, height = grid_size(bmin, bmax, base.derived().cs)

    cache: dict[tuple, _Recorded] = {}
    total = 0
    done = 0

    def shared(key: tuple, label: str, run, actx: BuildContext, est: dict[str, int]):
        """The stage's recorded result for ``key``, running it (once) when new."""
        nonlocal done
        if key not in cache:
            overall.progress(done / max(total, 1), label)
            stage_ctx = BuildContext()
            stage_est: dict[str, int] = {}
            value = run(stage_ctx, stage_est)
            cache[key] = _Recorded(value, stage_ctx.warnings, stage_ctx.timings, stage_est)
            for name, seconds in stage_ctx.timings.items():
                overall.add_time(name, seconds)
            done += 1
        return cache[key].replay(actx, est)

    keys = []
    for _agent, cfg in pairs:
        d = cfg.derived()
        slope_k = ("mark", float(cfg.agent_max_slope))
        raster_k = ("rasterize", slope_k, d.walkable_climb)
        filter_k = ("filters", raster_k, d.walkable_height)
        keys.append((slope_k, raster_k, filter_k, ("compact", filter_k)))
    keys_run = {k for ks in keys for k in ks} | {("erode", ks[3]) for ks in keys}
    # Erosion's distance is only compared with 2 * radius: capped at the largest agent's.
    erosion_cap = 2 * max(cfg.derived().walkable_radius for _agent, cfg in pairs)
    total = len(keys_run) + len(pairs)

    results: dict[str, pipeline.BakeResult] = {}
    tails: list[tuple[AgentType, pipeline.BakeResult, DerivedConfig, CompactHeightfield, Any]] = []
    for (agent, cfg), (slope_key, raster_key, filter_key, compact_key) in zip(
        pairs, keys, strict=True
    ):
        actx, est = contexts[agent.name], estimates[agent.name]
        derived = cfg.derived()

        def mark(c: BuildContext, _e: dict[str, int], cfg=cfg) -> np.ndarray:
            with c.stage("mark"):
                return rasterize.mark_walkable_triangles(verts, tris, cfg.agent_max_slope, ctx=c)

        tri_areas = shared(slope_key, "mark", mark, actx, est)
        assert isinstance(tri_areas, np.ndarray)
        limits.check_heights(verts, tris, tri_areas, bmin, bmax, cfg, derived, actx)

        def raster(c: BuildContext, _e: dict[str, int], d=derived, areas=tri_areas) -> Heightfield:
            with c.stage("rasterize"):
                return rasterize.rasterize_triangles(
                    verts, tris, areas, bmin, bmax, d.cs, d.ch, width, height,
                    d.walkable_climb, ctx=c,
                )  # fmt: skip

        hf_raw = shared(raster_key, "rasterize", raster, actx, est)
        assert isinstance(hf_raw, Heightfield)

        def filt(c: BuildContext, e: dict[str, int], cfg=cfg, d=derived, hf=hf_raw):
            return pipeline.filter_stages(hf, cfg, d, c, e, inputs)

        hf, stage_areas = shared(filter_key, "filters", filt, actx, est)  # type: ignore[misc]

        def compact(c: BuildContext, e: dict[str, int], cfg=cfg, d=derived, hf=hf):
            return pipeline.compact_stage(hf, cfg, d, c, e, inputs)

        chf = shared(compact_key, "compact", compact, actx, est)
        assert isinstance(chf, CompactHeightfield)

        def erosion(c: BuildContext, _e: dict[str, int], chf=chf) -> np.ndarray:
            with c.stage("erode"):
                return area.erosion_distance(chf, cap=erosion_cap)

        erosion_dist = shared(("erode", compact_key), "erode", erosion, actx, est)
        assert isinstance(erosion_dist, np.ndarray)
        result = pipeline.BakeResult(
            config=cfg,
            bmin=np.asarray(bmin, dtype=np.float32),
            bmax=np.asarray(bmax, dtype=np.float32),
            width=width,
            height=height,
            tri_areas=tri_areas,
            heightfield=hf,
            stage_areas=dict(stage_areas),
        )
        if offmesh_links is not None:  # hand-made links: every agent's navmesh takes them
            result.offmesh_links = offmesh_links
        tails.append((agent, result, derived, chf, erosion_dist))

    # Erosion's threshold onwards, per agent: here, or in worker processes (same arrays).
    jobs = [
        (result, derived, tuple(volumes), inputs, chf, dist)
        for _agent, result, derived, chf, dist in tails
    ]
    overall.progress(done / max(total, 1), "agents: erode onwards")
    beside = (executor is not None or workers > 1) and _worth_processes(
        jobs, kept=executor is not None
    )
    if not beside:
        outputs = _agent_tails(_own_compacts(jobs))
    else:
        groups = _agent_groups([_job_cost(job) for job in jobs], max(2, workers))
        if executor is not None:
            outputs = _tails_beside(jobs, groups, executor, "the executor failed")
        else:
            outputs = _tails_in_processes(jobs, groups)
    for (agent, result, _d, _c, _e), (fields_set, timings, warnings, stage_est) in zip(
        tails, outputs, strict=True
    ):
        actx, est = contexts[agent.name], estimates[agent.name]
        for name, value in fields_set.items():
            setattr(result, name, value)
        for message in warnings:
            actx.warn(message)
        for name, seconds in timings.items():
            actx.add_time(name, seconds)
            overall.add_time(name, seconds)
        est.update(stage_est)
        result.memory_estimates = est
        result.counts = pipeline._counts(result, tris.shape[0])
        pipeline._warn_if_empty(result, verts, tris, actx)
        actx.done()
        result.timings = actx.timings
        result.warnings = actx.warnings
        for message in actx.warnings:
            overall.warn(f"agent {agent.name}: {message}")
        results[agent.name] = result
    overall.done()
    return results


def bake_agents_tiled(
    verts,
    tris,
    config: NavConfig | None,
    agents,
    tile_size: int,
    *,
    executor: cf.Executor | None = None,
    workers: int | None = None,
    volumes: tuple[pipeline.AreaVolume, ...] = (),
) -> dict:
    """One tiled bake per agent (`core.tiles`, RecastDemo's tile mesh), ``{agent name:
    TiledBake}`` in the agents' order; each equals ``tiles.bake_tiled`` with that agent's
    settings, tile for tile.

    The triangles are checked and chunked once (the chunk tree depends on the triangles
    only); each agent then gets its own tile grid (its border is its radius + 3 cells) and its
    tiles run on ``executor`` / ``workers`` as `tiles.bake_plan` runs them. Unlike
    `bake_agents`, no stage is shared between agents inside a tile (each agent's tile is baked
    whole). tile_size [Units: cells] [Limit: 8..4096]. Raises `VoxNavError` for bad input or
    agents before any tile is baked, `tiles.TileBakeError` when a tile fails.
    """
    from . import tiles

    base = (config or NavConfig()).validate(agent_height=False)  # each agent checked whole
    pairs = check_agents(agents, base)
    n_workers = tiles.worker_count(workers)
    out = {}
    with tiles.tile_executor(executor, n_workers) as pool:
        # One pool for the chunk tree's subtrees and every agent's tiles.
        plan = tiles.plan_tiles(
            verts, tris, pairs[0][1], tile_size, volumes=volumes, executor=pool,
            workers=n_workers,
        )  # fmt: skip
        plans = []
        for agent, cfg in pairs:  # every agent's world checked before any tile is baked
            bmin, bmax = pipeline.grid_bounds(plan.verts, cfg)
            warnings = tiles.check_world(plan.verts, plan.tris, bmin, bmax, cfg)
            grid = tiles.TileGrid.create(bmin, bmax, cfg, plan.grid.tile_size)
            agent_plan = dataclasses.replace(plan, config=cfg, grid=grid, warnings=warnings)
            try:  # as a separate tiled bake refuses them, up front
                tiles.check_tile_grid(grid, cfg)
                tiles.check_tile_count(agent_plan)
            except VoxNavError as exc:
                raise VoxNavError(f"agent {agent.name!r}: {exc}") from None
            plans.append(agent_plan)
        for (agent, _cfg), agent_plan in zip(pairs, plans, strict=True):
            out[agent.name] = tiles.bake_plan(agent_plan, executor=pool, workers=n_workers)
    return out
