"""``python -m core.agents_bench``: three agents in one bake vs one bake, and vs three bakes.

Agents small/medium/large (radius 0.3 / 0.6 / 1.2 wu, NavConfig's height, climb and slope), on
the shared dungeon and dungeon tiled 4x4 (`core.bench.tile_mesh`). Prints the median wall time
of each of: one bake (medium), `bake_agents` with the three, three separate bakes; and the
ratio of the three-agent bake to one bake beside the issue's target (< 1.6x), in one
process, with the per-agent stages in 2 processes (``workers=2``: this one and one forked
per bake), and on a pool of 2 processes kept between bakes (``executor=``; started and
warmed before the clock, as an application that bakes again and again keeps it). Dungeon is
below `core.agents.PROCESS_MIN_SPANS`: its last two variants bake in one process too. Each
run times every variant in turn, and a ratio is the median over the runs of that run's
variant time over its one bake (the machine's speed drifts within seconds; runs compare like
with like).

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
from .bench import _find_meshes, tile_mesh
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


def _interleaved_seconds(
    variants: dict[str, Callable[[], object]], runs: int
) -> dict[str, list[float]]:
    """Wall seconds of every variant per run, the variants run one after the other within each
    run: a ratio of two variants of one run compares the same few seconds of this (noisy,
    shared) machine."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times


def _separate(verts, tris, config: NavConfig) -> list[pipeline.BakeResult]:
    return [pipeline.bake(verts, tris, config.replace(agent_radius=a.radius)) for a in AGENTS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.agents_bench", description=__doc__)
    parser.add_argument("--runs", type=positive_int, default=3, help="runs per figure (median)")
    parser.add_argument("--meshes", default=None, help="folder with dungeon.obj")
    args = parser.parse_args(argv)
    folder = _find_meshes(args.meshes)
    verts, tris = read_obj(folder / "dungeon.obj")
    config = NavConfig()
    print(f"agents: {', '.join(f'{a.name} r={a.radius:g}' for a in AGENTS)}; runs {args.runs}")
    # Workers from a forkserver (they hold only what is sent to them), started and warmed on
    # one bake before any clock runs.
    context = multiprocessing.get_context("forkserver")
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        bake_agents(verts, tris, config, AGENTS, executor=pool)
        scenes = (("dungeon", (verts, tris)), ("dungeon 4x4", tile_mesh(verts, tris, 4)))
        for label, (v, t) in scenes:
            variants: dict[str, Callable[[], object]] = {
                "one": functools.partial(pipeline.bake, v, t, config),
                "in-process": functools.partial(bake_agents, v, t, config, AGENTS),
                "separate": functools.partial(_separate, v, t, config),
                "2 workers": functools.partial(bake_agents, v, t, config, AGENTS, workers=2),
                "kept pool": functools.partial(bake_agents, v, t, config, AGENTS, executor=pool),
            }
            times = _interleaved_seconds(variants, args.runs)
            one = statistics.median(times["one"])
            separate = statistics.median(times["separate"])
            for what in ("in-process", "2 workers", "kept pool"):
                seconds = statistics.median(times[what])
                ratio = statistics.median(
                    [a / b for a, b in zip(times[what], times["one"], strict=True)]
                )
                verdict = "ok" if ratio < TARGET_RATIO else "OVER"
                print(
                    f"{label:12s} one bake {one * 1000:7.1f} ms | 3 agents {what:10s} "
                    f"{seconds * 1000:7.1f} ms ratio {ratio:.2f}x (target < {TARGET_RATIO}x: "
                    f"{verdict}) | 3 separate bakes {separate * 1000:7.1f} ms"
                )
    return 0


if __name__ == "__main__":
    sys.exit(run_guarded(main, verbose=False))
