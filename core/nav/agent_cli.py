"""``query`` and ``path`` with ``--agent``: the same commands on each named agent's navmesh.

The agents (``NAME[:radius=..,height=..,max_climb=..,max_slope=..]``, as ``bake --agent``) are
baked at once by `core.agents.bake_agents`; ``query`` then writes one answer file per agent
(`core.agents.agent_output`: ``out.npz`` -> ``out_NAME.npz``), ``path`` prints one path per
agent under an ``agent NAME:`` line.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from .. import atomic
from ..cliutil import offmesh_links_from_args, print_warnings
from ..errors import UsageError, VoxNavError
from .navdata import create_nav_mesh_data
from .navmesh import NavMesh

F32 = np.float32


def agent_navmeshes(
    mesh_path,
    recast_frame: bool,
    config,
    specs,
    workers: int | None = 1,
    tile_size: int = 0,
    offmesh_links=None,
):
    """``{agent name: NavMesh}`` of the agents in ``specs`` (bake --agent text), baked from the
    OBJ in one `bake_agents` run (with ``tile_size`` > 0 [Units: cells], one tiled bake per
    agent, `bake_agents_tiled`). ``workers``: processes, as those take it (None: every
    core). `UsageError` for a bad spec, `VoxNavError` naming an agent whose navmesh is
    empty."""
    from ..agents import bake_agents, check_agents, parse_agent_spec
    from ..objio import read_obj

    try:
        agents = [parse_agent_spec(spec, config) for spec in specs]
        check_agents(agents, config)
    except VoxNavError as exc:
        raise UsageError(f"--agent: {exc}") from None
    verts, tris = read_obj(mesh_path, recast_frame=recast_frame)
    if tile_size:  # RecastDemo's tile mesh per agent, its tiles linked across their borders
        from ..agents import bake_agents_tiled
        from ..offmesh import link_warnings

        tiled = bake_agents_tiled(verts, tris, config, agents, tile_size, workers=workers)
        navs = {}
        for name, bake in tiled.items():
            bake.offmesh_links = offmesh_links
            if bake.empty:
                print_warnings([f"agent {name}: {w}" for w in bake.warnings])
                raise VoxNavError(
                    f"{mesh_path}: agent {name}'s tiled bake made no walkable polygons, so "
                    "there is nothing to query; check that agent's size and that the mesh has "
                    "floors"
                )
            # As a separate run says them (`build_navmesh`), each under its agent's name.
            nav = navs[name] = bake.navmesh()
            said = [*bake.warnings, *link_warnings(offmesh_links, lambda n=nav: n)]
            print_warnings([f"agent {name}: {w}" for w in said])
        return navs
    results = bake_agents(verts, tris, config, agents, workers=workers, offmesh_links=offmesh_links)
    navs = {}
    for name, result in results.items():
        if result.empty or result.polymesh is None or result.polymesh.npolys == 0:
            # The agent's warnings name the likely cause (its radius erodes every span, say).
            why = "; ".join(result.warnings) or (
                "check that agent's size and that the mesh has floors"
            )
            raise VoxNavError(
                f"{mesh_path}: agent {name}'s bake made no walkable polygons, so there is "
                f"nothing to query: {why}"
            )
        print_warnings([f"agent {name}: {w}" for w in result.warnings])
        cfg = result.config
        data = create_nav_mesh_data(
            result.polymesh,
            result.detail,
            walkable_height=float(F32(cfg.agent_height)),
            walkable_radius=float(F32(cfg.agent_radius)),
            walkable_climb=float(F32(cfg.agent_max_climb)),
            offmesh=result.offmesh_links,
        )
        navs[name] = NavMesh.from_data(data)
    return navs


def per_agent(command: Callable[..., int], args, config) -> int:
    """Run ``command(args, config, nav, batch=batch)`` once per ``--agent`` on that agent's
    navmesh; ``--out`` (when the command has one) becomes ``agent_output(out, name)``. Every
    output is checked before the bake (none may be the mesh or the queries file), and the
    outputs are replaced together at the end (all or none)."""
    from ..agents import agent_output, check_agents, parse_agent_spec

    tile_size = int(getattr(args, "tile_size", 0) or 0)
    workers = getattr(args, "workers", None)
    queries = getattr(args, "queries", None)
    try:  # the agents first: two of one name are a usage error, not two outputs colliding
        agents = [parse_agent_spec(spec, config) for spec in args.agent]
        names = [agent.name for agent, _cfg in check_agents(agents, config)]
    except VoxNavError as exc:
        raise UsageError(f"--agent: {exc}") from None
    with atomic.Batch(inputs=[args.mesh, queries]) as batch:
        if getattr(args, "out", None):
            for name in names:
                batch.add(agent_output(args.out, name), f"--out (agent {name})")
        navs = agent_navmeshes(
            args.mesh,
            args.recast_frame,
            config,
            args.agent,
            workers,
            tile_size,
            offmesh_links_from_args(args),
        )
        status = 0
        for name, nav in navs.items():
            one = argparse.Namespace(**vars(args))
            one.agent = []
            if getattr(args, "out", None):
                one.out = agent_output(args.out, name)
            print(f"agent {name}:")
            status = max(status, command(one, config, nav, batch=batch))
        batch.commit()
    return status
