"""Agent types by name in the core CLI's queries: ``path --agent`` prints each agent's path on
its own navmesh, ``query --agent`` writes one answer file per agent, equal to a separate run
with that agent's settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.__main__ import main

from .linkscenes import box, merge, write_obj


def _door_mesh(tmp_path: Path) -> Path:
    """A floor split by a 3 m wall with a 1 m door: wide enough for radius 0.2, not 0.6."""
    verts, tris = merge(
        box((0.0, 0.0, -0.5), (12.0, 6.0, 0.0)),
        box((5.8, 0.0, 0.0), (6.2, 2.5, 3.0)),
        box((5.8, 3.5, 0.0), (6.2, 6.0, 3.0)),
    )
    return write_obj(tmp_path / "door.obj", verts, tris)


ROUTE = ["--from", "2", "3", "0", "--to", "10", "3", "0", "--cell-size", "0.1"]
AGENTS = ["--agent", "small:radius=0.2", "--agent", "big:radius=0.6"]


def _sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        if line.startswith("agent ") and line.endswith(":"):
            name = line[len("agent ") : -1]
            out[name] = ""
        elif name is not None:
            out[name] += line + "\n"
    return out


def test_path_per_agent_small_passes_the_door_big_does_not(tmp_path, capsys):
    mesh = _door_mesh(tmp_path)
    assert main(["path", str(mesh), *ROUTE, *AGENTS]) == 0
    sections = _sections(capsys.readouterr().out)
    assert list(sections) == ["small", "big"]
    assert "path: reached" in sections["small"]
    assert "path: partial" in sections["big"]
    # Each agent's section is what a separate run with its settings prints.
    for name, radius in (("small", "0.2"), ("big", "0.6")):
        assert main(["path", str(mesh), *ROUTE, "--agent-radius", radius]) == 0
        assert capsys.readouterr().out == sections[name]


def _queries(tmp_path: Path) -> Path:
    path = tmp_path / "q.npz"
    np.savez(
        path,
        q_points=np.array([[2, 3, 0], [10, 3, 0], [6, 3, 0]], np.float32),
        q_pairs=np.array([[0, 1]], np.int32),
        q_ray_start=np.array([0], np.int32),
        q_ray_end=np.array([[10, 3, 0]], np.float32),
        q_half_extents=np.array([2, 2, 4], np.float32),
    )
    return path


def test_query_writes_one_file_per_agent_equal_to_separate_runs(tmp_path, capsys):
    mesh, queries = _door_mesh(tmp_path), _queries(tmp_path)
    out = tmp_path / "out.npz"
    argv = ["query", str(mesh), "--queries", str(queries), "--cell-size", "0.1"]
    assert main([*argv, "--out", str(out), *AGENTS]) == 0
    assert not out.exists()
    for name, radius in (("small", "0.2"), ("big", "0.6")):
        single = tmp_path / f"single_{name}.npz"
        assert main([*argv, "--out", str(single), "--agent-radius", radius]) == 0
        mine, alone = np.load(tmp_path / f"out_{name}.npz"), np.load(single)
        names = sorted(k for k in alone.files if not k.startswith("time_"))
        assert sorted(k for k in mine.files if not k.startswith("time_")) == names
        for key in names:
            np.testing.assert_array_equal(mine[key], alone[key], err_msg=f"{name} {key}")
    small, big = np.load(tmp_path / "out_small.npz"), np.load(tmp_path / "out_big.npz")
    assert not np.array_equal(small["path_count"], big["path_count"]) or not np.array_equal(
        small["straight_count"], big["straight_count"]
    )


def test_bad_agent_spec_in_path_exits_2(tmp_path, capsys):
    mesh = _door_mesh(tmp_path)
    assert main(["path", str(mesh), *ROUTE, "--agent", "s:wide=2"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'wide'" in err and "Traceback" not in err


def test_tiled_agents_equal_separate_tiled_bakes(tmp_path):
    from core import tiles
    from core.agents import AgentType, bake_agents_tiled
    from core.config import NavConfig
    from core.objio import read_obj

    verts, tris = read_obj(_door_mesh(tmp_path))
    base = NavConfig(cell_size=0.1)
    agents = [AgentType("small", radius=0.2), AgentType("big", radius=0.6)]
    both = bake_agents_tiled(verts, tris, base, agents, 32, workers=1)
    assert list(both) == ["small", "big"]
    for agent in agents:
        alone = tiles.bake_tiled(verts, tris, agent.config(base), 32, workers=1)
        mine = tiles.tiled_dump_arrays(both[agent.name])
        theirs = tiles.tiled_dump_arrays(alone)
        assert sorted(mine) == sorted(theirs)
        for key in theirs:
            np.testing.assert_array_equal(mine[key], theirs[key], err_msg=f"{agent.name} {key}")
    assert both["small"].grid.border_size < both["big"].grid.border_size


def test_tiled_path_and_bake_per_agent(tmp_path, capsys):
    from core.nav.binio import read_navmesh_set

    mesh = _door_mesh(tmp_path)
    tiled = ["--tile-size", "32", "--workers", "1"]
    assert main(["path", str(mesh), *ROUTE, *AGENTS, *tiled]) == 0
    sections = _sections(capsys.readouterr().out)
    assert "path: reached" in sections["small"] and "path: partial" in sections["big"]
    for name, radius in (("small", "0.2"), ("big", "0.6")):
        assert main(["path", str(mesh), *ROUTE, *tiled, "--agent-radius", radius]) == 0
        assert capsys.readouterr().out == sections[name]
    out = tmp_path / "nav.bin"
    argv = ["bake", str(mesh), "--cell-size", "0.1", *tiled, "--out", str(out), *AGENTS]
    assert main(argv) == 0
    assert not out.exists()
    for name, radius in (("small", "0.2"), ("big", "0.6")):
        single = tmp_path / f"single_{name}.bin"
        assert main([*argv[:-4], "--out", str(single), "--agent-radius", radius]) == 0
        mine = (tmp_path / f"nav_{name}.bin").read_bytes()
        assert mine == single.read_bytes(), name
        assert len(read_navmesh_set(single).tiles) > 1


def test_solo_agents_name_themselves_in_the_pruning_warnings(tmp_path, capsys):
    """bake --agent ... --reachable-from (untiled): the pruning warnings did not say which
    agent they were about ("nothing was pruned" of one agent read as of all); the tiled bake
    prefixes them."""
    from .refdata import mesh_path

    out = tmp_path / "nav.obj"
    code = main(
        ["bake", str(mesh_path("dungeon")), "--out", str(out), "--agent", "small:radius=0.3",
         "--agent", "big:radius=1.2", "--reachable-from", "500", "500", "0"]
    )  # fmt: skip
    assert code == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "reachable-from" in ln]
    assert lines and all(ln.startswith("voxnav: warning: agent ") for ln in lines), lines
    assert {ln.split()[3] for ln in lines} == {"small:", "big:"}


# An off-mesh link starting far off the navmesh: left out, and said so.
STRAY_LINK = ["--offmesh-link", "50,50,0:52,50,0"]


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("voxnav: warning:")]


def test_path_and_query_per_agent_say_each_agents_warnings(tmp_path, capsys):
    """The bake's warnings of a separate run, under the agent's name (--agent printed none:
    the unplaced link was left out without a word), solo and tiled."""
    mesh = _door_mesh(tmp_path)
    for tiled in ([], ["--tile-size", "32", "--workers", "1"]):
        assert main(["path", str(mesh), *ROUTE, *tiled, *STRAY_LINK, *AGENTS]) == 0
        warned = _warnings(capsys.readouterr().err)
        for name, radius in (("small", "0.2"), ("big", "0.6")):
            argv = ["path", str(mesh), *ROUTE, *tiled, *STRAY_LINK, "--agent-radius", radius]
            assert main(argv) == 0
            alone = _warnings(capsys.readouterr().err)
            assert alone and any("off-mesh link" in w for w in alone)
            assert [w.replace("warning: ", f"warning: agent {name}: ") for w in alone] == [
                w for w in warned if f"agent {name}:" in w
            ]


def test_an_empty_agents_query_error_names_the_cause(tmp_path, capsys):
    mesh = _door_mesh(tmp_path)
    assert main(["path", str(mesh), *ROUTE, "--agent", "huge:radius=10"]) == 1
    err = capsys.readouterr().err
    assert "agent huge's bake made no walkable polygons" in err and "agent_radius" in err


def test_tiled_agent_bake_warns_of_an_unplaced_link(tmp_path, capsys):
    mesh = _door_mesh(tmp_path)
    out = tmp_path / "nav.bin"
    argv = ["bake", str(mesh), "--cell-size", "0.1", "--tile-size", "32", "--workers", "1"]
    assert main([*argv, "--out", str(out), *STRAY_LINK, *AGENTS]) == 0
    warned = _warnings(capsys.readouterr().err)
    for name in ("small", "big"):
        assert any(f"agent {name}:" in w and "off-mesh link" in w for w in warned), warned


def test_query_with_two_agents_of_one_name_is_a_usage_error(tmp_path, capsys):
    mesh = _door_mesh(tmp_path)
    argv = ["query", str(mesh), "--queries", str(_queries(tmp_path)), "--cell-size", "0.1"]
    argv += ["--out", str(tmp_path / "a.npz"), "--agent", "x:radius=0.2", "--agent", "x"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "two agents are named 'x'" in err and "Traceback" not in err


def test_an_agents_own_height_is_not_refused_by_the_base_height(tmp_path, capsys):
    """--cell-height 1 with the default agent_height (2: under 3 cell heights) is no error
    when every agent gives its own height; an agent left with the base's height is."""
    from core.agents import AgentType, bake_agents
    from core.config import NavConfig
    from core.objio import read_obj
    from core.pipeline import bake

    mesh = _door_mesh(tmp_path)
    out = tmp_path / "nav.obj"
    argv = ["bake", str(mesh), "--cell-size", "0.1", "--cell-height", "1", "--out", str(out)]
    assert main([*argv, "--agent", "tall:height=5"]) == 0
    capsys.readouterr()
    assert main([*argv, "--agent", "tall:height=5", "--agent", "plain"]) == 2
    assert "agent 'plain'" in capsys.readouterr().err
    verts, tris = read_obj(mesh)
    base = NavConfig(cell_size=0.1, cell_height=1.0)
    together = bake_agents(verts, tris, base, [AgentType("tall", height=5.0)])
    alone = bake(verts, tris, base.replace(agent_height=5.0))
    np.testing.assert_array_equal(together["tall"].polymesh.polys, alone.polymesh.polys)
