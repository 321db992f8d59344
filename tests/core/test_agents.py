"""Several agents in one bake (core.agents): each equals a separate bake, array for array."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from core import limits, pipeline
from core.__main__ import main
from core.agents import AgentType, bake_agents, parse_agent_spec
from core.config import NavConfig
from core.context import BuildContext
from core.errors import VoxNavError
from core.objio import read_obj

from .refdata import mesh_path


def _equal(a, b, where: str) -> None:
    """Every array and scalar field of two stage results (dataclasses) equal."""
    assert type(a) is type(b), where
    if a is None:
        return
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert np.asarray(x).dtype == np.asarray(y).dtype, f"{where}.{f.name} dtype"
            np.testing.assert_array_equal(x, y, err_msg=f"{where}.{f.name}")
        elif dataclasses.is_dataclass(x):
            _equal(x, y, f"{where}.{f.name}")
        elif isinstance(x, list):
            assert len(x) == len(y), f"{where}.{f.name}"
            for i, (u, v) in enumerate(zip(x, y, strict=True)):
                if dataclasses.is_dataclass(u):
                    _equal(u, v, f"{where}.{f.name}[{i}]")
                else:
                    np.testing.assert_array_equal(u, v, err_msg=f"{where}.{f.name}[{i}]")
        else:
            assert x == y, f"{where}.{f.name}: {x!r} != {y!r}"


def assert_same_bake(got: pipeline.BakeResult, want: pipeline.BakeResult, name: str) -> None:
    assert got.config == want.config
    np.testing.assert_array_equal(got.tri_areas, want.tri_areas)
    _equal(got.heightfield, want.heightfield, f"{name}.heightfield")
    assert got.stage_areas.keys() == want.stage_areas.keys()
    for stage in want.stage_areas:
        np.testing.assert_array_equal(got.stage_areas[stage], want.stage_areas[stage])
    np.testing.assert_array_equal(got.area_initial, want.area_initial)
    np.testing.assert_array_equal(got.dist_raw, want.dist_raw)
    _equal(got.compact, want.compact, f"{name}.compact")  # regions: compact.reg
    _equal(got.contours, want.contours, f"{name}.contours")
    _equal(got.polymesh, want.polymesh, f"{name}.polymesh")
    _equal(got.detail, want.detail, f"{name}.detail")
    assert got.counts == want.counts
    assert got.warnings == want.warnings
    assert got.empty == want.empty


def count_batches(monkeypatch, name: str) -> list[int]:
    """Replace `core.agents`' batch builder ``name`` (distance fields, polygon meshes or
    detail meshes of several agents) by one recording how many agents each call builds (its
    first argument's length for the meshes, its second's for the fields); returns that list."""
    import core.agents as agents_module

    real = getattr(agents_module, name)
    sizes: list[int] = []

    def counting(first, second, *args, **kwargs):
        sizes.append(len(second if name == "build_distance_fields" else first))
        return real(first, second, *args, **kwargs)

    monkeypatch.setattr(agents_module, name, counting)
    return sizes


def separate(verts, tris, config: NavConfig, agent: AgentType, **kw) -> pipeline.BakeResult:
    return pipeline.bake(
        verts,
        tris,
        config.replace(
            agent_radius=agent.radius,
            agent_height=agent.height,
            agent_max_climb=agent.max_climb,
            agent_max_slope=agent.max_slope,
        ),
        **kw,
    )


@pytest.fixture(scope="module")
def dungeon():
    return read_obj(mesh_path("dungeon"))


RADII = [AgentType("small", radius=0.3), AgentType("medium"), AgentType("large", radius=1.2)]
#: Agents that share only part of the pipeline: another climb (new rasterization), another
#: height (new filters and compact), another slope (new marking), and one equal to "medium"
#: in everything but its name.
MIXED = [
    AgentType("medium"),
    AgentType("climber", max_climb=0.3),
    AgentType("tall", height=3.0, radius=0.9),
    AgentType("goat", max_slope=30.0),
    AgentType("twin"),
]


@pytest.mark.parametrize(
    ("agents", "workers", "fork"),
    [(RADII, 1, True), (MIXED, 1, True), (MIXED, 2, True), (MIXED, 2, False)],
    ids=["radii", "mixed", "pool", "pool-pickled"],
)
def test_each_agent_equals_a_separate_bake(dungeon, agents, workers, fork, monkeypatch):
    import core.agents as agents_module

    # dungeon is below the size at which other processes pay: they run all the same here
    monkeypatch.setattr(agents_module, "PROCESS_MIN_SPANS", 0)
    monkeypatch.setattr(agents_module, "EXECUTOR_MIN_SPANS", 0)
    if not fork:  # as on platforms without fork: the jobs are pickled to the workers
        import multiprocessing

        monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    verts, tris = dungeon
    config = NavConfig()
    ctx = BuildContext()
    results = bake_agents(verts, tris, config, agents, ctx=ctx, workers=workers)
    assert list(results) == [a.name for a in agents]
    for agent in agents:
        assert_same_bake(results[agent.name], separate(verts, tris, config, agent), agent.name)
    # The results share no compact heightfield (each agent's later stages modify theirs).
    ids = {id(r.compact.area) for r in results.values() if r.compact is not None}
    assert len(ids) == len(agents)


def test_agent_bakes_in_two_threads_keep_their_own_forked_jobs(dungeon, monkeypatch):
    """Two bake_agents(workers=2) calls in two threads: the jobs a forked worker reads were
    one module global, which the second bake replaced before the first bake's pool forked,
    so the first bake's worker baked the second's jobs (an agent came back with the other
    bake's navmesh, silently). The pause makes that one thread switch certain."""
    import threading

    import core.agents as agents_module

    monkeypatch.setattr(agents_module, "PROCESS_MIN_SPANS", 0)
    monkeypatch.setattr(agents_module, "EXECUTOR_MIN_SPANS", 0)
    verts, tris = dungeon
    configs = {"A": NavConfig(cell_size=0.3), "B": NavConfig(cell_size=0.35)}
    rows = {
        "A": [AgentType("a1", radius=0.3), AgentType("a2", radius=1.2)],
        "B": [AgentType("b1", radius=0.6), AgentType("b2", radius=0.9)],
    }
    a_inside, b_inside, a_done = threading.Event(), threading.Event(), threading.Event()
    original = agents_module._tails_beside

    def paused(*args, **kwargs):
        if threading.current_thread().name == "A":  # B registers its jobs now
            a_inside.set()
            b_inside.wait(30)
        else:  # A forks, bakes and ends before B goes on
            b_inside.set()
            a_done.wait(30)
        return original(*args, **kwargs)

    monkeypatch.setattr(agents_module, "_tails_beside", paused)
    out: dict[str, object] = {}

    def run(name: str) -> None:
        try:
            if name == "B":
                a_inside.wait(30)
            out[name] = bake_agents(verts, tris, configs[name], rows[name], workers=2)
        except BaseException as exc:  # noqa: BLE001 - reported below
            out[name] = exc
        finally:
            if name == "A":
                a_done.set()

    threads = [threading.Thread(target=run, args=(name,), name=name) for name in "AB"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for name in "AB":
        results = out[name]
        assert isinstance(results, dict), results
        for agent in rows[name]:
            got = results[agent.name]
            assert not any("process" in w for w in got.warnings), got.warnings
            assert_same_bake(got, separate(verts, tris, configs[name], agent), agent.name)


@pytest.mark.parametrize(
    ("spans", "vertices", "polygons"),
    [(0, 1, 1), (1 << 19, 520, 250)],
    ids=["apart", "split"],
)
def test_batch_bounds_keep_every_agent_equal_to_its_bake(
    dungeon, spans, vertices, polygons, monkeypatch
):
    """With the batch bounds low, distance fields, polygon meshes and detail meshes are made
    agent by agent (or the meshes in two batches): the same navmeshes."""
    import core.agents as agents_module

    monkeypatch.setattr(agents_module, "DISTANCE_BATCH_SPANS", spans)
    monkeypatch.setattr(agents_module, "POLYMESH_BATCH_VERTICES", vertices)
    monkeypatch.setattr(agents_module, "DETAIL_BATCH_POLYGONS", polygons)
    field_sizes = count_batches(monkeypatch, "build_distance_fields")
    sizes = count_batches(monkeypatch, "build_poly_meshes")
    detail_sizes = count_batches(monkeypatch, "build_poly_mesh_details")
    verts, tris = dungeon
    results = bake_agents(verts, tris, NavConfig(), RADII)
    for agent in RADII:
        want = separate(verts, tris, NavConfig(), agent)
        assert_same_bake(results[agent.name], want, agent.name)
    # dungeon's agents have 288, 247 and 253 contour vertices: 288 + 247 > 520 >= 247 + 253;
    # and 140, 118 and 112 polygons: 140 + 118 > 250 >= 118 + 112 (a batch of one builds
    # its detail mesh alone, in its bake's own stage)
    assert field_sizes == ([] if spans == 0 else [3])
    assert sizes == ([1, 1, 1] if vertices == 1 else [1, 2])
    assert detail_sizes == ([] if polygons == 1 else [2])


@pytest.mark.parametrize(
    ("kind", "auto_links"),
    [("processes", False), ("threads", False), ("processes", True)],
    ids=["processes", "threads", "processes-auto-links"],
)
def test_agents_on_a_kept_executor_equal_separate_bakes(dungeon, kind, auto_links, monkeypatch):
    # A pool kept between bakes: the per-agent stages of all agents but one group run on it
    # (pickled to processes without the solid heightfield unless automatic links read it; on
    # threads each agent's writable arrays are still its own), two bakes on the same pool;
    # every agent equals its separate bake.
    import core.agents as agents_module

    monkeypatch.setattr(agents_module, "PROCESS_MIN_SPANS", 0)
    monkeypatch.setattr(agents_module, "EXECUTOR_MIN_SPANS", 0)
    verts, tris = dungeon
    config = NavConfig(auto_links=auto_links)
    make = cf.ProcessPoolExecutor if kind == "processes" else cf.ThreadPoolExecutor
    with make(2) as pool:
        for agents in (RADII, MIXED) if not auto_links else (RADII,):
            results = bake_agents(verts, tris, config, agents, executor=pool)
            assert list(results) == [a.name for a in agents]
            for agent in agents:
                want = separate(verts, tris, config, agent)
                assert_same_bake(results[agent.name], want, agent.name)


class _BrokenPool(cf.Executor):
    """Refuses every job (``at_submit``) or fails it in its result."""

    def __init__(self, at_submit: bool):
        self.at_submit = at_submit

    def submit(self, fn, /, *args, **kwargs):
        if self.at_submit:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: cf.Future = cf.Future()
        future.set_exception(RuntimeError("a worker died"))
        return future


@pytest.mark.parametrize("at_submit", [True, False])
def test_agents_on_a_broken_executor_run_here_and_say_so(dungeon, at_submit, monkeypatch):
    # Every agent still equals its separate bake; the agents whose stages the executor lost
    # carry a warning naming the failure: medium and large, the group sent to it (small,
    # with the most walkable spans, is a group alone and the lighter one: it runs here).
    import core.agents as agents_module

    monkeypatch.setattr(agents_module, "PROCESS_MIN_SPANS", 0)
    monkeypatch.setattr(agents_module, "EXECUTOR_MIN_SPANS", 0)
    verts, tris = dungeon
    config = NavConfig()
    results = bake_agents(verts, tris, config, RADII, executor=_BrokenPool(at_submit))
    for i, agent in enumerate(RADII):
        got, want = results[agent.name], separate(verts, tris, config, agent)
        lost = [w for w in got.warnings if "the executor failed" in w]
        assert len(lost) == (1 if i else 0), got.warnings
        got.warnings = [w for w in got.warnings if w not in lost]
        assert_same_bake(got, want, agent.name)


def test_stages_are_shared_by_their_inputs(dungeon, monkeypatch):
    """Stages actually run: mark once per slope, rasterize once per (slope, climb), ..."""
    verts, tris = dungeon
    runs: dict[str, int] = {}
    import core.agents as agents_module

    class Counting(agents_module.BuildContext):  # type: ignore[misc, valid-type]
        def stage(self, name):
            runs[name] = runs.get(name, 0) + 1
            return super().stage(name)

    monkeypatch.setattr(agents_module, "BuildContext", Counting)
    batched = count_batches(monkeypatch, "build_distance_fields")
    meshes_together = count_batches(monkeypatch, "build_poly_meshes")
    details_together = count_batches(monkeypatch, "build_poly_mesh_details")
    bake_agents(verts, tris, NavConfig(), MIXED)
    # slopes: 45, 30; (slope, climb): +climber; (.., height): +tall. Erosion: its distance
    # once per compact heightfield, its threshold per agent; the later stages per agent, the
    # distance fields and the detail meshes of the two agents on one compact heightfield
    # (medium, twin) together, every agent's polygon mesh in one go.
    assert runs["mark"] == 2
    assert runs["rasterize"] == 3
    assert runs["filter_low_height"] == 4
    assert runs["compact"] == 4
    assert runs["erode"] == 4 + len(MIXED)
    assert batched == [2]
    assert runs["distance"] + sum(batched) == len(MIXED)
    assert details_together == [2] and runs["detail"] == len(MIXED) - 2
    assert meshes_together == [len(MIXED)] and "polymesh" not in runs  # all ear-clipped at once


def test_volumes_and_overall_context(dungeon):
    verts, tris = dungeon
    lo, hi = verts.min(axis=0), verts.max(axis=0)
    mid = (lo + hi) / 2
    box = pipeline.AreaVolume("box", (tuple(lo), (mid[0], mid[1], hi[2])), 0)
    ctx = BuildContext()
    results = bake_agents(verts, tris, NavConfig(), RADII[:2], ctx=ctx, volumes=(box,))
    for agent in RADII[:2]:
        want = separate(verts, tris, NavConfig(), agent, volumes=(box,))
        assert_same_bake(results[agent.name], want, agent.name)
    assert "erode" in ctx.timings and "mark" in ctx.timings


@pytest.mark.parametrize("workers", [1, 2])
def test_empty_agent_warns_with_its_name(workers, monkeypatch):
    import core.agents as agents_module

    monkeypatch.setattr(agents_module, "PROCESS_MIN_SPANS", 0)
    monkeypatch.setattr(agents_module, "EXECUTOR_MIN_SPANS", 0)
    verts = np.array([[0, 0, 0], [4, 0, 0], [4, 4, 0], [0, 4, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    ctx = BuildContext()
    agents = [
        AgentType("ok", radius=0.3), AgentType("huge", radius=3.0),
        AgentType("vast", radius=3.3),
    ]  # fmt: skip
    results = bake_agents(verts, tris, NavConfig(), agents, ctx=ctx, workers=workers)
    assert not results["ok"].empty
    assert results["huge"].empty and results["vast"].empty
    assert any(w.startswith("agent huge: ") and "agent_radius" in w for w in ctx.warnings)
    # Two agents of no work are still two groups: no pool of zero workers.
    results = bake_agents(verts, tris, NavConfig(), agents[1:], workers=workers)
    assert results["huge"].empty and results["vast"].empty


@pytest.mark.parametrize(
    ("agents", "needle"),
    [
        ([], "at least one agent"),
        ([AgentType("a"), AgentType("a", radius=0.3)], "two agents are named 'a'"),
        # navmesh_Tall.obj and navmesh_tall.obj: one file on Windows and macOS.
        ([AgentType("Tall"), AgentType("tall", radius=0.3)], "'Tall' and 'tall' differ only"),
        ([AgentType("a", radius=math.nan)], "agent 'a': agent_radius"),
        ([AgentType("a", height=0.1)], "agent 'a': agent_height"),
        ([AgentType("a", max_slope=90.0)], "agent 'a': agent_max_slope"),
        ([AgentType("bad name")], "agent name 'bad name'"),
    ],
)
def test_bad_agents_are_refused(agents, needle):
    verts = np.array([[0, 0, 0], [4, 0, 0], [4, 4, 0]], np.float32)
    with pytest.raises(VoxNavError, match=needle):
        bake_agents(verts, [[0, 1, 2]], NavConfig(), agents)


def test_parse_agent_spec():
    agent = parse_agent_spec("small:radius=0.3,height=1.8")
    assert agent == AgentType("small", radius=0.3, height=1.8)
    assert parse_agent_spec("x:max-climb=0.5 , max_slope=30") == AgentType(
        "x", max_climb=0.5, max_slope=30.0
    )
    base = NavConfig(agent_radius=0.2)
    assert parse_agent_spec("plain", base).radius == 0.2
    for spec, needle in [
        ("s:radius=0.3,wide=2", "unknown key 'wide'"),
        ("s:radius=nan", "agent_radius"),
        ("s:radius=abc", "radius must be a number"),
        ("s:radius", "not key=value"),
        ("radius=0.3", "has no name"),
        ("s:radius=0.3,radius=0.4", "given twice"),
        (":radius=0.3", "agent name ''"),
    ]:
        with pytest.raises(VoxNavError, match=needle):
            parse_agent_spec(spec)


def _small_mesh(tmp_path: Path) -> Path:
    verts = np.array(
        [[0, 0, 0], [8, 0, 0], [8, 8, 0], [0, 8, 0], [3, 3, 0], [5, 3, 0], [5, 5, 0],
         [3, 5, 0], [3, 3, 3], [5, 3, 3], [5, 5, 3], [3, 5, 3]],
        np.float32,
    )  # fmt: skip
    tris = [[0, 1, 2], [0, 2, 3]]
    for a, b, c, d in [(8, 9, 10, 11), (4, 5, 9, 8), (5, 6, 10, 9), (6, 7, 11, 10), (7, 4, 8, 11)]:
        tris += [[a, b, c], [a, c, d]]
    # OBJ is Y-up: Z-up (x, y, z) is written as (x, z, -y), as Blender's exporter does.
    lines = [f"v {x:g} {z:g} {-y:g}" for x, y, z in verts.tolist()]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in tris]
    path = tmp_path / "scene.obj"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_writes_one_navmesh_per_agent(tmp_path, capsys):
    mesh = _small_mesh(tmp_path)
    out = tmp_path / "navmesh.obj"
    code = main(
        ["bake", str(mesh), "--out", str(out), "--json", str(tmp_path / "nav.json"),
         "--agent", "small:radius=0.3,height=1.8", "--agent", "large:radius=1.2,height=2.5"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert not out.exists()
    for name in ("small", "large"):
        assert (tmp_path / f"navmesh_{name}.obj").stat().st_size > 0
        assert (tmp_path / f"nav_{name}.json").stat().st_size > 0
    text = capsys.readouterr().out
    assert "agent small:" in text and "agent large:" in text
    # The same files as separate bakes.
    for name, extra in (("small", ["--agent-radius", "0.3", "--agent-height", "1.8"]),):
        single = tmp_path / "single.obj"
        assert main(["bake", str(mesh), "--out", str(single), *extra]) == 0
        assert single.read_bytes() == (tmp_path / f"navmesh_{name}.obj").read_bytes()


def test_cli_all_or_nothing_when_an_agent_is_empty(tmp_path, capsys):
    mesh = _small_mesh(tmp_path)
    out = tmp_path / "navmesh.obj"
    code = main(
        ["bake", str(mesh), "--out", str(out), "--agent", "ok:radius=0.3",
         "--agent", "huge:radius=5"]
    )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "huge" in err
    assert list(tmp_path.glob("navmesh*")) == []


@pytest.mark.parametrize(
    ("specs", "needle"),
    [
        (["s:radius=0.3,wide=2"], "unknown key 'wide'"),
        (["s:radius=nan"], "agent_radius"),
        (["a:radius=0.3", "a:radius=0.6"], "two agents are named 'a'"),
        (["a:radius=0.3", "A:radius=0.6"], "differ only in letter case"),
        (["a:height=0.1"], "agent_height"),
    ],
)
def test_cli_bad_agent_specs_exit_2(tmp_path, capsys, specs, needle):
    mesh = _small_mesh(tmp_path)
    argv = ["bake", str(mesh), "--out", str(tmp_path / "n.obj")]
    for spec in specs:
        argv += ["--agent", spec]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert "Traceback" not in err
    assert list(tmp_path.glob("n*")) == []


def test_bad_workers_are_refused():
    verts = np.array([[0, 0, 0], [4, 0, 0], [4, 4, 0]], np.float32)
    with pytest.raises(VoxNavError, match="workers"):
        bake_agents(verts, [[0, 1, 2]], NavConfig(), [AgentType("a")], workers=0)


@pytest.mark.parametrize(
    ("costs", "count", "groups"),
    [
        ([5, 4, 3], 2, [[0], [1, 2]]),  # the costliest alone, the lighter group first
        ([3, 4, 5], 2, [[2], [0, 1]]),
        ([1, 1, 1, 1], 2, [[0, 2], [1, 3]]),
        ([9, 1, 1], 2, [[1, 2], [0]]),
        ([2, 7, 3], 5, [[0], [2], [1]]),  # more groups than jobs: one job each, lightest first
        ([2, 7, 3], 1, [[0, 1, 2]]),
        ([0, 0, 0], 2, [[0, 2], [1]]),  # no work (empty navmeshes): still two groups
        ([4, 0, 0], 2, [[1, 2], [0]]),
    ],
)
def test_agent_groups_share_the_work_out(costs, count, groups):
    import core.agents as agents_module

    assert agents_module._agent_groups(costs, count) == groups


class _CountingPool(cf.Executor):
    """Runs each job at once in this process and counts them."""

    def __init__(self):
        self.jobs = 0

    def submit(self, fn, /, *args, **kwargs):
        self.jobs += 1
        future: cf.Future = cf.Future()
        future.set_result(fn(*args, **kwargs))
        return future


@pytest.mark.parametrize("least, sent", [(1 << 14, True), (1 << 15, False)])
def test_kept_executor_takes_levels_from_its_own_threshold(dungeon, least, sent, monkeypatch):
    # A kept pool costs only the pickling: it takes levels from EXECUTOR_MIN_SPANS up, not
    # from PROCESS_MIN_SPANS (dungeon's 23.6k spans, here on either side of it).
    import core.agents as agents_module

    monkeypatch.setattr(agents_module, "EXECUTOR_MIN_SPANS", least)
    verts, tris = dungeon
    pool = _CountingPool()
    results = bake_agents(verts, tris, NavConfig(), RADII, executor=pool)
    assert (pool.jobs > 0) is sent
    for agent in RADII:
        assert_same_bake(results[agent.name], separate(verts, tris, NavConfig(), agent), agent.name)


def test_small_agent_stages_start_no_process(dungeon, monkeypatch):
    # dungeon's 23.6k spans are below PROCESS_MIN_SPANS: workers=2 bakes here, as workers=1.
    import core.agents as agents_module

    def no_pool(*args, **kwargs):
        raise AssertionError("a process pool was started")

    from core import tiles

    monkeypatch.setattr(agents_module.cf, "ProcessPoolExecutor", no_pool)
    monkeypatch.setattr(tiles.WorkerPool, "__init__", no_pool)  # VoxNav's own pools
    verts, tris = dungeon
    results = bake_agents(verts, tris, NavConfig(), RADII, workers=2)
    for agent in RADII:
        want = separate(verts, tris, NavConfig(), agent)
        assert_same_bake(results[agent.name], want, agent.name)
    monkeypatch.setattr(agents_module, "PROCESS_MIN_SPANS", 0)
    monkeypatch.setattr(agents_module, "EXECUTOR_MIN_SPANS", 0)
    with pytest.raises(AssertionError, match="process pool"):
        bake_agents(verts, tris, NavConfig(), RADII, workers=2)


def test_workers_none_takes_every_core_where_the_platform_forks(dungeon, monkeypatch):
    import multiprocessing

    import core.agents as agents_module
    from core import tiles

    monkeypatch.setattr(tiles, "default_workers", lambda: 3)
    assert agents_module.default_workers() == 3
    groups_seen = []
    beside = agents_module._tails_in_processes

    def spy(jobs, groups):
        groups_seen.append(groups)
        return beside(jobs, groups)

    monkeypatch.setattr(agents_module, "_tails_in_processes", spy)
    monkeypatch.setattr(agents_module, "PROCESS_MIN_SPANS", 0)
    monkeypatch.setattr(agents_module, "EXECUTOR_MIN_SPANS", 0)
    verts, tris = dungeon
    results = bake_agents(verts, tris, NavConfig(), RADII, workers=None)
    assert groups_seen == [[[2], [1], [0]]]  # three cores: one agent each, lightest here
    for agent in RADII:
        assert_same_bake(results[agent.name], separate(verts, tris, NavConfig(), agent), agent.name)
    # Without fork a worker would start a fresh interpreter: None stays in this process.
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert agents_module.default_workers() == 1


@pytest.mark.parametrize("workers", [1.5, "2", limits.MAX_WORKERS + 1])
def test_non_integer_or_huge_workers_are_refused(workers):
    verts = np.array([[0, 0, 0], [4, 0, 0], [4, 4, 0]], np.float32)
    with pytest.raises(VoxNavError, match=f"from 1 to {limits.MAX_WORKERS}"):
        bake_agents(verts, [[0, 1, 2]], NavConfig(), [AgentType("a")], workers=workers)


def test_an_agent_name_ending_in_a_newline_is_refused():
    with pytest.raises(VoxNavError, match="must be 1 to 63 letters"):
        AgentType("small\n").validate()


def test_tiled_agents_refuse_a_later_agents_oversized_tiles_before_any_tile_bakes(monkeypatch):
    """Each agent's tile grid is checked up front as its own tiled bake checks it (the first
    agent's alone was: the second's refusal came after the first's tiles had baked)."""
    from core import tiles
    from core.agents import bake_agents_tiled

    verts = np.array([[0, 0, 0], [30, 0, 0], [30, 30, 0], [0, 30, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    base = NavConfig(cell_size=0.1, memory_limit=120 << 20)
    agents = [AgentType("small", radius=0.0), AgentType("big", radius=12.0)]
    with pytest.raises(VoxNavError) as alone:
        tiles.bake_tiled(verts, tris, agents[1].config(base), 128, workers=1)
    baked = []
    monkeypatch.setattr(tiles, "bake_plan", lambda *a, **k: baked.append(1))
    with pytest.raises(VoxNavError) as together:
        bake_agents_tiled(verts, tris, base, agents, 128, workers=1)
    assert str(together.value) == f"agent 'big': {alone.value}"
    assert baked == []
