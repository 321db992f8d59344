"""Bad input found by feeding the CLI and the core odd values: each is refused before any
stage runs (or any file is written) with a message that says what to change."""

from __future__ import annotations

import struct
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from core import agents, limits, memory, pipeline, tiles
from core import tiles as tiles_module
from core.__main__ import main
from core.agents import AgentType
from core.config import NavConfig
from core.errors import VoxNavError
from core.nav import cli as nav_cli
from core.objio import read_obj

from .linkscenes import box, write_obj

FLOOR = box((0.0, 0.0, -0.5), (8.0, 8.0, 0.0))


def _floor(tmp_path: Path) -> Path:
    return write_obj(tmp_path / "floor.obj", *FLOOR)


def _no_stage(*_args, **_kwargs):
    raise AssertionError("a stage ran although the input was refused")


def test_agent_radius_beyond_erosion_range_is_refused_before_any_stage(monkeypatch):
    # 1000 wu at 0.3 wu cells is 3334 cells; Recast's 8-bit erosion distance reaches 127.
    monkeypatch.setattr(pipeline.rasterize, "rasterize_triangles", _no_stage)
    config = NavConfig(agent_radius=1000.0)
    with pytest.raises(VoxNavError, match=r"agent_radius 1000 is 3334 cells.*cell_size >= 7\.9"):
        pipeline.bake(*FLOOR, config)
    with pytest.raises(VoxNavError, match="agent_radius 1000 is 3334 cells"):
        tiles.plan_tiles(*FLOOR, config, 32)
    # The advice holds: the largest radius it names still bakes.
    derived = NavConfig(agent_radius=38.0).derived()
    assert derived.walkable_radius <= limits.MAX_ERODE_RADIUS
    limits.check_agent_fields(NavConfig(agent_radius=38.0), derived)


def test_an_agent_beyond_the_erosion_range_is_named():
    with pytest.raises(VoxNavError, match=r"agent 'wide': agent_radius 50 is 167 cells"):
        agents.check_agents([AgentType("a"), AgentType("wide", radius=50.0)], NavConfig())


def test_tiled_agents_refuse_a_later_agent_before_any_tile(monkeypatch):
    monkeypatch.setattr(tiles, "bake_tile_job", _no_stage)
    with pytest.raises(VoxNavError, match="agent 'wide'"):
        agents.bake_agents_tiled(
            *FLOOR, NavConfig(), [AgentType("a"), AgentType("wide", radius=50.0)], 32, workers=1
        )


def test_a_stray_vertex_far_away_is_refused_without_numpy_warnings():
    verts = np.array([[0, 0, 0], [1e30, 0, 0], [0, 3, 0]], np.float32)
    tris = np.array([[0, 1, 2]], np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflowing cast would warn (and be garbage)
        bound = memory.fragment_bound(verts, tris, verts.min(0), verts.max(0), 0.3)
        assert 0 < int(bound[0]) <= 1 << 40
        with pytest.raises(VoxNavError, match="stray vertices"):
            pipeline.bake(verts, tris)


def test_bounds_in_the_wrong_order_are_shown_as_numbers():
    config = NavConfig(bounds_min=(0, 0, 0), bounds_max=(-1, 2, 2))
    with pytest.raises(VoxNavError) as info:
        config.validate()
    assert str(info.value) == (
        "bounds_max (-1, 2, 2) must be greater than bounds_min (0, 0, 0) on every axis"
    )


def test_obj_whose_faces_have_fewer_than_three_vertices(tmp_path):
    path = tmp_path / "edges.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2\nf 2 3\n")
    with pytest.raises(VoxNavError, match=r"edges\.obj: each of its 2 faces .* fewer than three"):
        read_obj(path)
    # One real face among them is a mesh (the short ones make no triangle, as in RecastDemo).
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2\nf 1 2 3\n")
    assert read_obj(path)[1].shape == (1, 3)


def test_tile_failure_shows_voxnav_messages_as_they_are():
    cause = VoxNavError("the tile is too tall")
    text = str(tiles.TileBakeError(2, 3, cause))
    assert text.startswith("tile (2, 3) failed to bake: the tile is too tall; nothing was")
    assert "MemoryError: " in str(tiles.TileBakeError(0, 0, MemoryError("out of memory")))


def _queries(path: Path, **changes) -> Path:
    arrays = {
        "q_points": np.array([[2, 2, 0], [6, 6, 0]], np.float32),
        "q_pairs": np.array([[0, 1]], np.int32),
        "q_ray_start": np.array([0], np.int32),
        "q_ray_end": np.array([[6, 2, 0]], np.float32),
        "q_half_extents": np.array([2, 2, 4], np.float32),
    }
    arrays.update(changes)
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"q_points": np.array([["a", "b", "c"]])}, "q_points must hold numbers"),
        ({"q_pairs": np.array([[0, 0.5]])}, "q_pairs must hold whole indices"),
        ({"q_ray_start": np.array([0.25])}, "q_ray_start must hold whole indices"),
        ({"q_half_extents": np.array([True, True, True])}, "q_half_extents must hold numbers"),
    ],
    ids=["text points", "fractional pair", "fractional ray start", "booleans"],
)
def test_query_files_with_values_that_are_not_numbers(tmp_path, changes, message):
    with pytest.raises(VoxNavError, match=message):
        nav_cli.read_queries(_queries(tmp_path / "q.npz", **changes))


def test_a_damaged_queries_file_is_named(tmp_path):
    # A flipped data byte fails the member's CRC check (zipfile.BadZipFile), a byte early in
    # a compressed member's stream fails zlib; both were the CLI's "unexpected" catch-all.
    path = _queries(tmp_path / "q.npz")
    data = path.read_bytes()
    at = data.find(b"q_points.npy") + len(b"q_points.npy") + 140  # in q_points' data
    damaged = bytearray(data)
    damaged[at] ^= 0x40
    path.write_bytes(bytes(damaged))
    with pytest.raises(VoxNavError, match=r"cannot read queries file .*q\.npz, it is damaged"):
        nav_cli.read_queries(path)
    with np.load(_queries(tmp_path / "plain.npz")) as z:
        arrays = {k: z[k] for k in z.files}
    packed = tmp_path / "packed.npz"
    np.savez_compressed(packed, **arrays)
    data = packed.read_bytes()
    with zipfile.ZipFile(packed) as archive:
        member = max(archive.infolist(), key=lambda info: info.compress_size)
    name_len, extra_len = struct.unpack_from("<HH", data, member.header_offset + 26)
    damaged = bytearray(data)
    damaged[member.header_offset + 30 + name_len + extra_len + 3] ^= 0xFF
    packed.write_bytes(bytes(damaged))
    with pytest.raises(VoxNavError, match=r"packed\.npz, it is damaged"):
        nav_cli.read_queries(packed)


def test_a_queries_file_that_is_not_an_npz(tmp_path):
    path = tmp_path / "q.npz"
    path.write_bytes(b"not an archive")
    with pytest.raises(VoxNavError, match=r"q\.npz is not a NumPy \.npz archive"):
        nav_cli.read_queries(path)
    path.write_bytes(b"")
    with pytest.raises(VoxNavError, match="it is empty"):
        nav_cli.read_queries(path)


def test_a_queries_file_read_through_a_pipe(tmp_path):
    """`query --queries <(cat q.npz)`: a pipe has size 0, so a valid archive was refused as
    "it is empty"; an empty pipe still is."""
    import os
    import threading

    expected = nav_cli.read_queries(_queries(tmp_path / "q.npz"))
    for payload, empty in (((tmp_path / "q.npz").read_bytes(), False), (b"", True)):
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        writer = threading.Thread(target=fifo.write_bytes, args=(payload,), daemon=True)
        writer.start()
        try:
            if empty:
                with pytest.raises(VoxNavError, match="it is empty"):
                    nav_cli.read_queries(fifo)
            else:
                got = nav_cli.read_queries(fifo)
                assert got.keys() == expected.keys()
                assert all(np.array_equal(got[k], expected[k]) for k in expected)
        finally:
            writer.join(10)
            fifo.unlink()


def test_query_checks_its_output_before_baking(tmp_path, monkeypatch, capsys):
    mesh = _floor(tmp_path)
    queries = _queries(tmp_path / "q.npz")
    monkeypatch.setattr(nav_cli, "navmesh_from_args", _no_stage)
    out = tmp_path / "missing" / "answers.npz"
    assert main(["query", str(mesh), "--queries", str(queries), "--out", str(out)]) == 1
    assert "output folder" in capsys.readouterr().err
    assert main(["query", str(mesh), "--queries", str(mesh), "--out", str(tmp_path / "a.npz")]) == 1
    assert "is not a NumPy .npz archive" in capsys.readouterr().err


def test_per_agent_queries_are_written_all_or_none(tmp_path, monkeypatch, capsys):
    mesh = _floor(tmp_path)
    queries = _queries(tmp_path / "q.npz")
    out = tmp_path / "answers.npz"
    (tmp_path / "answers_big.npz").mkdir()  # the second agent's output cannot be written
    monkeypatch.setattr("core.nav.agent_cli.agent_navmeshes", _no_stage)
    args = ["query", str(mesh), "--queries", str(queries), "--out", str(out)]
    assert main([*args, "--agent", "small:radius=0.2", "--agent", "big:radius=0.6"]) == 1
    assert "(agent big)" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "answers_big.npz", "floor.obj", "q.npz",
    ]  # fmt: skip
    monkeypatch.undo()
    (tmp_path / "answers_big.npz").rmdir()
    assert main([*args, "--agent", "small:radius=0.2", "--agent", "big:radius=0.6"]) == 0
    for name in ("small", "big"):
        with np.load(tmp_path / f"answers_{name}.npz") as z:
            assert z["near_status"].shape == (2,)


@pytest.mark.parametrize("half", [["0", "2", "2"], ["-1", "2", "2"], ["nan", "2", "2"]])
def test_path_refuses_half_extents_that_are_not_positive_before_baking(
    tmp_path, monkeypatch, capsys, half
):
    monkeypatch.setattr(nav_cli, "navmesh_from_args", _no_stage)
    route = ["--from", "2", "2", "0", "--to", "6", "6", "0", "--half-extents", *half]
    assert main(["path", str(_floor(tmp_path)), *route]) == 2
    assert "--half-extents must be three positive sizes" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("route", "words"),
    [
        (["--from", "1e39", "2", "0", "--to", "6", "6", "0"], "--from and --to need finite"),
        (["--from", "2", "2", "0", "--to", "6", "nan", "0"], "--from and --to need finite"),
        (["--from", "2", "2", "0", "--to", "6", "6", "0", "--half-extents", "1e39", "1", "1"],
         "--half-extents must be three positive sizes (wu) up to 1e+09"),
    ],
)  # fmt: skip
def test_path_points_beyond_float32_are_usage_errors(tmp_path, monkeypatch, capsys, route, words):
    # 1e39 was cast to float32 first (a NumPy RuntimeWarning on stderr, then an infinite
    # point); --reachable-from nan exited 1 (the bake's error), not 2 (a bad flag value).
    monkeypatch.setattr(nav_cli, "navmesh_from_args", _no_stage)
    assert main(["path", str(_floor(tmp_path)), *route]) == 2
    err = capsys.readouterr().err
    assert words in err and "RuntimeWarning" not in err


@pytest.mark.parametrize("tiles", [[], ["--tile-size", "32"]])
@pytest.mark.parametrize("point", [["nan", "0", "0"], ["1e39", "0", "0"]])
def test_bad_reachable_from_is_a_usage_error_before_baking(
    tmp_path, monkeypatch, capsys, tiles, point
):
    # It exited 1 (the bake's own error), and a tiled bake baked every tile first.
    monkeypatch.setattr(pipeline, "bake", _no_stage)
    monkeypatch.setattr(tiles_module, "bake_tiled", _no_stage)
    out = tmp_path / ("n.bin" if tiles else "n.json")
    argv = ["bake", str(_floor(tmp_path)), "--out", str(out), "--reachable-from", *point, *tiles]
    assert main(argv) == 2
    assert "--reachable-from needs finite coordinates within" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    "argv", [["bench-queries", "--pairs", "0"], ["bench-queries", "--runs", "0"]]
)
def test_benchmark_counts_below_one_are_usage_errors(argv, capsys):
    assert main(argv) == 2
    assert "must be at least 1, got 0" in capsys.readouterr().err


def test_bench_queries_with_fewer_pairs_than_its_interactive_sample(capsys):
    """--pairs 1..49 printed the table, then 'unexpected IndexError' (the interactive path's
    median read 50 pairs)."""
    assert main(["bench-queries", "--pairs", "3", "--runs", "1"]) == 0
    out, err = capsys.readouterr()
    assert "median of 3:" in out and err == ""


def test_agents_bench_reports_bad_input_in_one_line(tmp_path, capsys):
    from core import agents_bench
    from core.cliutil import run_guarded

    code = run_guarded(lambda: agents_bench.main(["--meshes", str(tmp_path)]), verbose=False)
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("voxnav: error: --meshes") and "Traceback" not in err
    with pytest.raises(SystemExit) as info:
        agents_bench.main(["--runs", "0"])
    assert info.value.code == 2


@pytest.mark.parametrize("module", ["core.nav.bench_sampling", "core.bench_obstacles"])
def test_other_benchmarks_refuse_bad_flags_in_one_line(module, tmp_path, capsys):
    import importlib

    from core.cliutil import run_guarded

    bench = importlib.import_module(module)
    with pytest.raises(SystemExit) as info:
        bench.main(["--runs", "0"])
    assert info.value.code == 2
    code = run_guarded(lambda: bench.main(["--meshes", str(tmp_path)]), verbose=False)
    err = capsys.readouterr().err
    assert code == 1 and "voxnav: error:" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_during_a_command_cleans_up_as_ctrl_c_does(tmp_path, name):
    """SIGTERM (kill, timeout, a cancelled CI job) and SIGHUP (a closed terminal) ended the
    process at once: a tiled bake's worker pool was left running and the hidden temp file of
    its output stayed beside it.
    Now it is raised like Ctrl-C: the temp file goes, exit 1, and the handler is restored.
    (In a child process: without the handler the signal would end the test run.)"""
    import subprocess
    import sys

    target = tmp_path / "nav.bin"
    target.write_bytes(b"previous")
    script = f"""
import os, signal, sys, time
from pathlib import Path
from core import atomic
from core.cliutil import run_guarded

def command():
    with atomic.replacing({str(target)!r}) as temp:
        Path(temp).write_bytes(b"half")
        os.kill(os.getpid(), signal.{name})
        time.sleep(30)  # the signal interrupts this
    return 0

before = signal.getsignal(signal.{name})
code = run_guarded(command, verbose=False)
assert signal.getsignal(signal.{name}) is before
sys.exit(code)
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert f"voxnav: error: terminated ({name})" in done.stderr
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nav.bin"]


def test_ctrl_c_while_the_command_starts_is_one_line(tmp_path):
    """A Ctrl-C while NumPy and the core imported (before the command's own handling) printed
    a KeyboardInterrupt traceback. Here the signal comes as NumPy's import starts, in a child
    run as ``python -m core`` runs; importing `core.__main__` elsewhere keeps Python's own
    handling (this test process's, too)."""
    import signal
    import subprocess
    import sys

    script = """
import builtins, os, runpy, signal, sys
plain = builtins.__import__
def importing(name, *args, **kwargs):
    if name == "numpy" and "numpy" not in sys.modules:
        os.kill(os.getpid(), signal.SIGINT)
    return plain(name, *args, **kwargs)
builtins.__import__ = importing
sys.argv = ["core", "--help"]
runpy.run_module("core", run_name="__main__", alter_sys=True)
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (1, "voxnav: error: interrupted\n")
    assert done.stdout == ""
    import core.__main__  # noqa: F401

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize(
    "extra",
    [["--cell-size", "abc"], ["--workers", "0"], ["--cellsize", "0.2"], ["--tile-size", "7.5"]],
)
def test_flag_errors_are_one_voxnav_error_line(tmp_path, capsys, extra):
    """Errors argparse finds printed 'python -m core bake: error: ...', not the documented
    'voxnav: error: ...' line every other failure prints."""
    out = tmp_path / "never.obj"
    assert main(["bake", "mesh.obj", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and lines[0].startswith("voxnav: error: "), err
    assert not out.exists()


def test_three_number_flags_take_negative_numbers_in_any_spelling(tmp_path, capsys):
    """-1e-3 and -5. were taken for flags ("expected 3 arguments"); -0.001 worked."""
    from .refdata import mesh_path

    mesh = str(mesh_path("dungeon"))
    answers = []
    for z in ("-0.001", "-1e-3", "-1.E-3"):
        code = main(["path", mesh, "--from", "0", "0", "0", "--to", "3", "-2", z])
        answers.append((code, capsys.readouterr().out))
    assert answers[0] == answers[1] == answers[2]


def test_a_closed_standard_output_does_not_fail_the_bake(tmp_path):
    """Piping into `head` (the reader gone before the summary lines): the bake raised
    BrokenPipeError and exited 1 ("cannot access: Broken pipe"), after its outputs were
    replaced when the pipe went late, throwing the bake away when it went early."""
    import subprocess
    import sys

    from .refdata import mesh_path

    out = tmp_path / "nav.obj"
    out.write_text("OLD\n")
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-m", "core", "bake", str(mesh_path("dungeon")), "--out", str(out)],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before anything is printed
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 0, err
    assert err == "" and out.read_text().startswith("# VoxNav navigation mesh")


@pytest.mark.parametrize("agent", [[], ["--agent", "small:radius=0.3"]])
def test_a_bad_link_flag_is_refused_before_the_tiles_bake(tmp_path, capsys, agent, monkeypatch):
    """With --tile-size, a bad --offmesh-link was refused (exit 2) only after every tile had
    baked; solo bakes refuse it first."""
    from core import agents as agents_module

    from .refdata import mesh_path

    def no_bake(*args, **kwargs):
        raise AssertionError("the tiles baked before the flag was checked")

    monkeypatch.setattr(tiles_module, "bake_tiled", no_bake)
    monkeypatch.setattr(agents_module, "bake_agents_tiled", no_bake)

    out = tmp_path / "nav.bin"
    bad = "--offmesh-link=1,2,3:4,5,6:radius=-1"
    code = main(
        ["bake", str(mesh_path("dungeon")), "--out", str(out), "--tile-size", "32", bad, *agent]
    )
    captured = capsys.readouterr()
    assert code == 2 and "radius must be > 0" in captured.err
    assert "tiles=" not in captured.out and not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("flag", "key", "value"),
    [("--agent-height", "height", "100"), ("--agent-radius", "radius", "50")],
)
def test_an_agent_beyond_recast_s_8_bit_fields_is_a_usage_error_in_either_spelling(
    tmp_path, capsys, flag, key, value
):
    """--agent-height 100 exited 1 (a failed bake) where --agent a:height=100 exited 2 (a bad
    setting value), for the same message and fix."""
    from .refdata import mesh_path

    out = tmp_path / "nav.obj"
    for extra in ([flag, value], ["--agent", f"a:{key}={value}"]):
        assert main(["bake", str(mesh_path("dungeon")), "--out", str(out), *extra]) == 2
        assert "8-bit" in capsys.readouterr().err
    assert not out.exists()


def test_prune_mode_without_reachable_from_is_a_usage_error(tmp_path, capsys):
    """--prune-mode disable without --reachable-from did nothing, silently (the output the
    same as without it)."""
    from .refdata import mesh_path

    out = tmp_path / "nav.json"
    assert (
        main(["bake", str(mesh_path("dungeon")), "--out", str(out), "--prune-mode", "disable"]) == 2
    )
    assert "--prune-mode disable needs --reachable-from" in capsys.readouterr().err
    assert not out.exists()


def test_query_positions_beyond_float32_are_one_voxnav_warning(tmp_path, capsys):
    """A float64 q_points value past float32 printed NumPy's RuntimeWarning and its source
    line; now one 'voxnav: warning:' line, and the point is answered as invalid."""
    mesh = _floor(tmp_path)
    queries = _queries(tmp_path / "q.npz", q_points=np.array([[1e300, 2, 0], [2, 2, 0], [6, 6, 0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(
            ["query", str(mesh), "--queries", str(queries), "--out", str(tmp_path / "a.npz")]
        )
    assert code == 0
    err = capsys.readouterr().err
    assert "voxnav: warning: 1 row(s) of q_points hold values beyond float32" in err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--obstacles", "--tile-size", "64"], "--tile-size do(es) not apply"),
        (["--obstacles", "--workers", "2", "--quick"], "--workers, --quick do(es) not apply"),
        (["--tile-size", "256", "--runs", "3"], "--runs does not apply"),
        (["--workers", "2"], "--workers applies to bench --tile-size N"),
    ],
)
def test_bench_refuses_flags_its_mode_does_not_use(capsys, extra, needle, monkeypatch):
    """bench --obstacles ignored --tile-size, --workers and --quick; bench --tile-size ignored
    --runs; the solo bench ignored --workers, each silently."""
    from core import bench

    def no_run(*args, **kwargs):
        raise AssertionError("the bench ran")

    monkeypatch.setattr(bench, "run_bench", no_run)
    monkeypatch.setattr(bench, "run_tiled_bench", no_run)
    assert main(["bench", *extra]) == 2
    assert needle in capsys.readouterr().err


def test_a_stop_a_callee_swallowed_still_stops_the_run(tmp_path):
    """Blender runs VoxNav's frame-change handler during a --png render and only prints what
    it raises: Ctrl-C or SIGTERM there was swallowed, and the run went on to replace every
    output and exit 0. The signal is recorded and raised again before any output commits."""
    import subprocess
    import sys

    target = tmp_path / "nav.obj"
    target.write_text("OLD\n")
    script = f"""
import os, signal, sys
from pathlib import Path
from core import atomic
from core.cliutil import run_guarded

def swallowing_handler():
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10**7):
            pass  # the handler runs here
    except BaseException:
        pass  # as Blender does with a handler's exception

def command():
    with atomic.Batch() as batch:
        with atomic.replacing({str(target)!r}, batch=batch) as temp:
            swallowing_handler()
            Path(temp).write_text("NEW\\n")
        batch.commit()
    return 0

sys.exit(run_guarded(command, verbose=False))
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "voxnav: error: terminated (SIGTERM)" in done.stderr
    assert target.read_text() == "OLD\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nav.obj"]


def test_an_output_ending_with_a_separator_names_no_file(tmp_path, capsys):
    """dump --out DIR/ became the hidden file DIR/.npz."""
    from .refdata import mesh_path

    out = str(tmp_path) + "/"
    assert main(["dump", str(mesh_path("dungeon")), "--out", out]) == 1
    assert "it names a folder (it ends with a separator)" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_queries_file_declaring_terabytes_is_named(tmp_path):
    """A member whose header declares (10**11, 3) read as 'out of memory: raise cell_size',
    blaming the bake and naming no file."""
    path = _queries(tmp_path / "q.npz")
    huge = tmp_path / "huge.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(huge, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "q_points.npy":
                data = data.replace(b"'shape': (2, 3)", b"'shape': (100000000000, 3)", 1)
            dst.writestr(info, data)
    with pytest.raises(VoxNavError, match=r"huge\.npz: an array in it is larger than"):
        nav_cli.read_queries(huge)


def test_a_full_standard_output_is_named(tmp_path):
    """`bake > /dev/full` said only "cannot access: No space left on device"."""
    mesh = tmp_path / "floor.obj"
    mesh.write_text("v 0 0 0\nv 10 0 0\nv 10 0 -10\nv 0 0 -10\nf 1 2 3 4\n")
    with open("/dev/full", "w") as full:
        run = subprocess.run(
            [sys.executable, "-m", "core", "bake", str(mesh), "--out", str(tmp_path / "n.obj")],
            stdout=full, stderr=subprocess.PIPE, text=True,
            cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
    assert run.returncode == 1
    assert "the standard output" in run.stderr and "Traceback" not in run.stderr


def test_obstacle_bench_needs_only_the_mesh_it_bakes(tmp_path, capsys):
    """`bench --obstacles --meshes DIR` refused a folder without nav_test.obj, which it never
    reads (it bakes the dungeon only)."""
    from .refdata import mesh_path

    (tmp_path / "dungeon.obj").symlink_to(mesh_path("dungeon"))
    assert main(["bench", "--obstacles", "--meshes", str(tmp_path), "--runs", "1"]) == 0
    assert "dungeon tile 32" in capsys.readouterr().out
    assert main(["bench", "--meshes", str(tmp_path), "--runs", "1"]) == 1  # it bakes nav_test
    assert "no nav_test.obj there" in capsys.readouterr().err
