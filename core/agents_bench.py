"""``python -m core.agents_bench``: three agents in one bake vs one bake, and vs three bakes.

Agents small/medium/large (radius 0.3 / 0.6 / 1.2 wu, NavConfig's height, climb and slope), on
the shared dungeon, nav_test and undulating (when the folder has it) and dungeon tiled 4x4
(`core.bench.tile_mesh`). Prints the median wall time of each of: one bake (medium),
`bake_agents` with the three, three separate bakes; and the ratio of the three-agent bake to
one bake beside the issue's target (< 1.6x), in one process, with the per-agent stages in 2
processes (``workers=2``: this one and one forked per bake), and on a pool of 2 processes kept
between bakes (``executor=``; started and warmed before the clock, as an application that
bakes again and again keeps it). Scenes below `core.agents.PROCESS_MIN_SPANS` (dungeon,
nav_test) bake "2 workers" in one process too, and those below `EXECUTOR_MIN_SPANS`
(dungeon) "kept pool". Each run times every variant in
turn, and a ratio is the median over the runs of that run's variant time over its one bake
(the machine's speed drifts within seconds; runs compare like with like).

Then, per scene, what sharing can give at all (`sharing_bound`): the stages up to erosion run
once, but every agent has its own distance field, regions, contours, polygon mesh and detail
mesh (`PER_AGENT_STAGES`). So by sharing alone three agents take one bake's shared stages
plus the three separate bakes' per-agent stages, whatever is shared before them (batching the
per-agent stages across agents, as `bake_agents` does, can do better); and, from Recast's
own stage times (`core.bench.recast_reference`, three agents of the medium one's cost), what
Recast's split of the work would give (`recast_split_bound`). Where a scene's bound is above
the target, its per-agent stages are most of a bake, and only making those stages faster (or
batching them across agents, as `bake_agents` does) can bring the ratio down.

    python -m core.agents_bench [--runs 3] [--meshes FOLDER]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import functools
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable

from . import pipeline
from .agents import AgentType, bake_agents
from .bench import RECAST_GROUPS, _find_meshes, recast_reference, tile_mesh
from .cliutil import positive_int, run_guarded
from .config import NavConfig
from .objio import read_obj

AGENTS = (
    AgentType("small", radius=0.3),
    AgentType("medium", radius=0.6),
    AgentType("large", radius=1.2),
)
#: The issue's ceiling: three agents at once over one bake.
TARGET_RATIO = 1.6
#: The stages every agent runs for itself (`pipeline.STAGES` after erosion; erosion's distance
#: is shared and its threshold is per agent: counted as shared, which keeps the bounds low).
PER_AGENT_STAGES = ("distance", "regions", "contours", "polymesh", "detail")

Timings = dict[str, float]


def _per_agent(timings: Timings) -> float:
    return sum(timings.get(stage, 0.0) for stage in PER_AGENT_STAGES)


def sharing_bound(one: Timings, separate: list[Timings]) -> float:
    """The least ratio to one bake that sharing the stages before `PER_AGENT_STAGES` alone can
    give: (``one``'s other stages + every ``separate`` bake's per-agent stages) / ``one``'s
    stages. ``one``: a bake's stage timings; ``separate``: each agent's own bake's. [Units:
    any one unit of time]"""
    total = sum(one.values())
    if total <= 0:
        raise ValueError("sharing_bound: the one bake took no time")
    return (total - _per_agent(one) + sum(_per_agent(t) for t in separate)) / total


def recast_split_bound(scene: str, agents: int = 3) -> float | None:
    """`sharing_bound` for ``agents`` agents of equal cost in Recast's stage times of ``scene``
    (`core.bench.recast_reference`); None when no stage split is known."""
    reference = recast_reference(scene)
    if len(reference) <= 1:
        return None
    per_agent = sum(
        ms for group, ms in reference.items() if group != "whole" and group in PER_AGENT_STAGES
    )
    shared = sum(ms for group, ms in reference.items() if group in RECAST_GROUPS) - per_agent
    return (shared + agents * per_agent) / (shared + per_agent)


def _interleaved(
    variants: dict[str, Callable[[], object]], runs: int, keep: tuple[str, ...] = ()
) -> tuple[dict[str, list[float]], dict[str, list[object]]]:
    """Wall seconds of every variant per run, the variants run one after the other within each
    run: a ratio of two variants of one run compares the same few seconds of this (noisy,
    shared) machine. Also what the variants named in ``keep`` returned, per run."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    kept: dict[str, list[object]] = {name: [] for name in keep}
    for _ in range(runs):
        for name, run in variants.items():
            start = time.perf_counter()
            value = run()
            times[name].append(time.perf_counter() - start)
            if name in kept:
                kept[name].append(value)
            del value
    return times, kept


def _one(verts, tris, config: NavConfig) -> Timings:
    return pipeline.bake(verts, tris, config).timings


def _separate(verts, tris, config: NavConfig) -> list[Timings]:
    return [
        pipeline.bake(verts, tris, config.replace(agent_radius=a.radius)).timings for a in AGENTS
    ]


def _scenes(folder) -> list[tuple[str, tuple]]:
    dungeon = read_obj(folder / "dungeon.obj")
    scenes = [("dungeon", dungeon), ("nav_test", read_obj(folder / "nav_test.obj"))]
    undulating = folder / "undulating.obj"
    if undulating.is_file():
        scenes.append(("undulating", read_obj(undulating)))
    else:
        print(f"(no {undulating}: undulating not run)")
    scenes.append(("dungeon 4x4", tile_mesh(*dungeon, 4)))
    return scenes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.agents_bench", description=__doc__)
    parser.add_argument("--runs", type=positive_int, default=3, help="runs per figure (median)")
    parser.add_argument(
        "--meshes", default=None, help="folder with dungeon.obj and nav_test.obj (undulating.obj)"
    )
    args = parser.parse_args(argv)
    folder = _find_meshes(args.meshes)
    scenes = _scenes(folder)
    verts, tris = scenes[0][1]
    config = NavConfig()
    print(f"agents: {', '.join(f'{a.name} r={a.radius:g}' for a in AGENTS)}; runs {args.runs}")
    # Workers from a forkserver (they hold only what is sent to them), started and warmed on
    # one bake before any clock runs.
    context = multiprocessing.get_context("forkserver")
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        bake_agents(verts, tris, config, AGENTS, executor=pool)
        for label, (v, t) in scenes:
            variants: dict[str, Callable[[], object]] = {
                "one": functools.partial(_one, v, t, config),
                "in-process": functools.partial(bake_agents, v, t, config, AGENTS),
                "separate": functools.partial(_separate, v, t, config),
                "2 workers": functools.partial(bake_agents, v, t, config, AGENTS, workers=2),
                "kept pool": functools.partial(bake_agents, v, t, config, AGENTS, executor=pool),
            }
            times, kept = _interleaved(variants, args.runs, keep=("one", "separate"))
            one = statistics.median(times["one"])
            ratios: dict[str, float] = {}
            separate = statistics.median(times["separate"])
            for what in ("in-process", "2 workers", "kept pool"):
                seconds = statistics.median(times[what])
                ratio = statistics.median(
                    [a / b for a, b in zip(times[what], times["one"], strict=True)]
                )
                verdict = "ok" if ratio < TARGET_RATIO else "OVER"
                ratios[what] = ratio
                print(
                    f"{label:12s} one bake {one * 1000:7.1f} ms | 3 agents {what:10s} "
                    f"{seconds * 1000:7.1f} ms ratio {ratio:.2f}x (target < {TARGET_RATIO}x: "
                    f"{verdict}) | 3 separate bakes {separate * 1000:7.1f} ms"
                )
            _print_bounds(label, kept["one"], kept["separate"], ratios)
    return 0


def _print_bounds(label: str, ones: list, separates: list, ratios: dict[str, float]) -> None:
    """The scene's `sharing_bound` (median over the runs), its per-agent share of one bake,
    `recast_split_bound`, and whether a ratio over the target is beyond what sharing gives."""
    bound = statistics.median(sharing_bound(o, s) for o, s in zip(ones, separates, strict=True))
    share = statistics.median(_per_agent(o) / sum(o.values()) for o in ones)
    recast = recast_split_bound(label)
    recast_text = f"; Recast's stage split would give {recast:.2f}x" if recast else ""
    print(
        f"{label:12s} per-agent stages {share:.0%} of one bake; sharing the stages before "
        f"them gives at best {bound:.2f}x (one bake's shared stages + 3 separate bakes' "
        f"per-agent stages){recast_text}"
    )
    if bound >= TARGET_RATIO and any(r >= TARGET_RATIO for r in ratios.values()):
        print(
            f"{label:12s} sharing alone cannot meet the target here: the rest has to come from "
            "the per-agent stages (batched across agents, as bake_agents does, or faster)"
        )


if __name__ == "__main__":
    sys.exit(run_guarded(main, verbose=False))
