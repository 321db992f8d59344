"""The benchmark's bookkeeping on made-up timings: reference scaling, normalisation, verdicts
and the printed table. Nothing here is timed."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import pytest

from core import bench
from core.errors import UsageError, VoxNavError
from core.pipeline import STAGES


def fake_timing(scene: str, ms_per_stage: float, speed: float) -> bench.SceneTiming:
    return bench.SceneTiming(scene, {s: ms_per_stage for s in STAGES}, speed, tris=10, runs=1)


def test_recast_stage_figures_are_scaled_to_the_issue_whole():
    ref = bench.recast_reference("dungeon 10x10")
    stages = [ref[g] for g in bench.RECAST_GROUPS]
    assert sum(stages) == pytest.approx(1880.0)
    # The shares of recast-parity.md are kept: regions / compact = 218 / 131.
    assert ref["regions"] / ref["compact"] == pytest.approx(218.0 / 131.0)
    assert bench.recast_reference("undulating")["whole"] == 102.0
    assert bench.recast_reference("no such scene") == {}


def test_every_pipeline_stage_belongs_to_one_recast_group():
    grouped = [s for stages in bench.RECAST_GROUPS.values() for s in stages]
    assert sorted(grouped) == sorted(STAGES)


def test_a_machine_twice_as_slow_keeps_the_ratio():
    quick = bench.normalised_ratio(100.0, 25.0, bench.speed_factor(0.2, 0.2))
    slow = bench.normalised_ratio(200.0, 25.0, bench.speed_factor(0.4, 0.2))
    assert quick == pytest.approx(4.0)
    assert slow == pytest.approx(4.0)
    with pytest.raises(VoxNavError):
        bench.speed_factor(0.0)


def test_verdicts_at_and_past_the_limit():
    assert bench.verdict(4.0, 4.0) == "met"
    assert bench.verdict(4.01, 4.0) == "NOT MET"
    assert bench.verdict(None, 4.0).startswith("unknown")
    assert bench.verdict(9.0, None) == ""


def test_scene_report_checks_stages_only_on_the_tilings():
    solo = fake_timing("dungeon", 1.0, 1.0)
    lines = bench.scene_report(solo)
    assert [c.what for c in solo.checks] == ["whole pipeline"]
    # 12 stages of 1 ms against Recast's 14.8 ms.
    assert solo.checks[0].value == pytest.approx(12.0 / 14.8)
    assert solo.checks[0].met is True
    assert lines[-1].split()[:2] == ["whole", "pipeline"]
    assert lines[-1].endswith("<= 4x: met")

    tiled = fake_timing("dungeon 4x4", 100.0, 2.0)
    bench.scene_report(tiled)
    by_group = {c.what: c for c in tiled.checks}
    assert set(by_group) == set(bench.RECAST_GROUPS) | {"whole pipeline"}
    ref = bench.recast_reference("dungeon 4x4")
    # Three filter stages of 100 ms on a machine twice as slow: 150 ms on the reference one.
    assert by_group["filters"].value == pytest.approx(150.0 / ref["filters"])
    assert by_group["whole pipeline"].value == pytest.approx(600.0 / 272.0)
    assert by_group["whole pipeline"].met is True
    assert by_group["polymesh"].met is False  # 50 ms against 7 * 272 / 229 = 8.3 ms


def test_unknown_reference_gives_unknown_not_met(monkeypatch):
    monkeypatch.setitem(bench.RECAST_WHOLE_MS, "house", None)
    assert bench.recast_reference("house") == {}
    timing = fake_timing("house", 5.0, 1.0)
    lines = bench.scene_report(timing)
    assert [c.met for c in timing.checks] == [None]
    assert "unknown" in lines[-1]
    text = bench.summary(timing.checks)
    assert text[0] == "targets met: 0 of 1"
    assert text[1].strip() == "house: whole pipeline unknown (target <= 4x): unknown"


def test_summary_counts_met_targets_and_units():
    checks = [
        bench.Check("a", "whole pipeline", 3.0, 4.0),
        bench.Check("b", "whole pipeline", 5.0, 4.0),
        bench.Check("dungeon 10x10", "peak", 0.5, 0.75, " GiB"),
    ]
    text = bench.summary(checks)
    assert text[0] == "targets met: 2 of 3"
    assert text[2].strip() == "b: whole pipeline 5.00x (target <= 4x): NOT MET"
    assert text[3].strip() == "dungeon 10x10: peak 0.50 GiB (target <= 0.75 GiB): met"


def test_calibration_workload_is_fixed():
    data = bench.calibration_data()
    assert data[0].shape == (1 << 20,) and data[1].shape == (1 << 21,)
    again = bench.calibration_data()
    assert bench.calibration_workload(*data) == bench.calibration_workload(*again)


def test_cpu_floor_line_spreads_all_the_cpu_over_the_workers():
    # 1 s of sorting here and 2 s on the workers, 5 s of tiles: 8 s on 2 cores is 4 s wall
    # at least; at speed 0.5 against Recast's 1 s that is 8x.
    chunks = SimpleNamespace(sort_cpu_seconds=1.0, sort_worker_cpu_seconds=2.0)
    bake = SimpleNamespace(tile_cpu_seconds=5.0)
    line = bench.cpu_floor_line(chunks, bake, 2, 1000.0, 0.5)
    assert "chunk tree 3.00 s (2.00 s of it on the workers)" in line
    assert "tiles 5.00 s = 8.00 s" in line
    assert "at least 4000 ms wall" in line
    assert line.endswith(": 8.00x")


def test_two_core_check_reports_the_median_run(monkeypatch, capsys):
    # Three bakes of 3000, 1000 and 2000 ms wall, each with its own CPU seconds: the check
    # takes the 2000 ms one (its ratio, polygons and CPU floor) and prints all three.
    from core import tiles

    walls = iter([0.0, 3.0, 10.0, 11.0, 20.0, 22.0])
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter=lambda: next(walls)))
    monkeypatch.setattr(bench, "read_obj", lambda path: (None, None))
    monkeypatch.setattr(bench, "tile_mesh", lambda verts, tris, n: (verts, tris))
    runs = iter(range(3))

    def plan_tiles(*args, **kwargs):
        i = next(runs)
        chunks = SimpleNamespace(sort_cpu_seconds=0.0, sort_worker_cpu_seconds=float(i))
        return SimpleNamespace(chunks=chunks, run=i)

    def bake_plan(plan, **kwargs):
        return SimpleNamespace(npolys=100 + plan.run, tile_cpu_seconds=1.0)

    monkeypatch.setattr(tiles, "plan_tiles", plan_tiles)
    monkeypatch.setattr(tiles, "bake_plan", bake_plan)
    monkeypatch.setattr(tiles, "tile_executor", lambda executor, n: nullcontext())
    calibration = SimpleNamespace(time=lambda: bench.CALIBRATION_REFERENCE_S / 2)  # speed 0.5
    check = bench.two_core_check(Path("meshes"), bench.NavConfig(), calibration, 1024, runs=3)
    out = capsys.readouterr().out
    recast = bench.RECAST_WHOLE_MS["dungeon 10x10"]
    assert check.value == pytest.approx(2000.0 / 0.5 / recast)
    assert "2000 ms wall (median of 3 runs: 3000 / 1000 / 2000 ms), 102 polygons" in out
    assert "chunk tree 2.00 s (2.00 s of it on the workers) + tiles 1.00 s = 3.00 s" in out


def test_two_core_check_needs_a_run():
    with pytest.raises(UsageError, match="at least 1"):
        bench.two_core_check(Path("meshes"), bench.NavConfig(), None, 1024, runs=0)


def test_agents_sharing_bound_counts_the_shared_stages_once_and_every_agents_own():
    from core import agents_bench

    one = {"rasterize": 6.0, "compact": 2.0, "distance": 1.0, "regions": 1.0}
    separate = [
        {"rasterize": 6.0, "compact": 2.0, "distance": 0.5, "detail": 0.5},
        {"rasterize": 6.0, "compact": 2.0, "distance": 1.0, "regions": 1.0},
        {"rasterize": 6.0, "compact": 2.0, "regions": 3.0},
    ]
    # Shared 8 once, then 1 + 2 + 3 of per-agent stages, over one bake's 10.
    assert agents_bench.sharing_bound(one, separate) == pytest.approx(14.0 / 10.0)
    with pytest.raises(ValueError):
        agents_bench.sharing_bound({}, separate)


def test_agents_recast_split_bound_reads_recasts_stage_shares():
    from core import agents_bench

    ref = bench.recast_reference("dungeon")
    per_agent = sum(ref[g] for g in agents_bench.PER_AGENT_STAGES)
    shared = ref["whole"] - per_agent
    expected = (shared + 3 * per_agent) / ref["whole"]
    assert agents_bench.recast_split_bound("dungeon") == pytest.approx(expected)
    assert 1.0 < expected < 3.0
    assert agents_bench.recast_split_bound("dungeon", agents=1) == pytest.approx(1.0)
    assert agents_bench.recast_split_bound("no such scene") is None
