"""Atomic outputs: nothing half-written, nothing overwritten that should not be.

A full disk is a file-size limit (``RLIMIT_FSIZE``, with SIGXFSZ ignored so the write fails
with EFBIG) in a subprocess running the core CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core import atomic, pipeline
from core.__main__ import main
from core.errors import OutputError, VoxNavError

REPO = Path(__file__).resolve().parents[2]
OLD = b"the previous file\n"


def _scene(path: Path) -> Path:
    """A 12 x 12 floor with a box on it (Y-up OBJ): bakes in well under a second."""
    lines = ["v -6 0 -6", "v 6 0 -6", "v 6 0 6", "v -6 0 6", "f 1 4 3 2"]
    box = [(x, y, z) for y in (0, 2) for z in (-1, 1) for x in (-1, 1)]
    lines += [f"v {x} {y} {z}" for x, y, z in box]
    quads = [(1, 2, 4, 3), (5, 7, 8, 6), (1, 5, 6, 2), (3, 4, 8, 7), (1, 3, 7, 5), (2, 6, 8, 4)]
    lines += ["f " + " ".join(str(4 + i) for i in q) for q in quads]
    path.write_text("\n".join(lines) + "\n")
    return path


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _run_cli(argv: list[str], file_size_limit: int | None = None) -> subprocess.CompletedProcess:
    code = (
        "import resource, signal, sys\n"
        "limit = int(sys.argv[1])\n"
        "if limit >= 0:\n"
        "    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]\n"
        "    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))\n"
        "from core.__main__ import main\n"
        "sys.exit(main(sys.argv[2:]))\n"
    )
    limit = -1 if file_size_limit is None else file_size_limit
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-c", code, str(limit), *argv],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )  # fmt: skip


# --- the module itself -----------------------------------------------------------------------


def test_replacing_writes_the_whole_file_and_keeps_the_mode(tmp_path):
    target = tmp_path / "out.txt"
    target.write_bytes(OLD)
    os.chmod(target, 0o640)
    with atomic.open_replacing(target, "w") as fh:
        fh.write("new\n")
        assert target.read_bytes() == OLD  # not replaced before the block ends
    assert target.read_text() == "new\n"
    assert (target.stat().st_mode & 0o777) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]


def test_a_failing_writer_leaves_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "out.txt"
    target.write_bytes(OLD)
    with pytest.raises(OutputError, match="out.txt: No space left on device; the previous"):
        with atomic.replacing(target) as temp:
            temp.write_bytes(b"half")
            raise OSError(28, "No space left on device")
    assert _files(tmp_path) == {"out.txt": OLD}
    with pytest.raises(RuntimeError):
        with atomic.replacing(target) as temp:
            temp.write_bytes(b"half")
            raise RuntimeError("a bug in the writer")
    assert _files(tmp_path) == {"out.txt": OLD}


def test_a_batch_replaces_nothing_when_its_last_output_fails(tmp_path):
    names = ["a.obj", "b.json", "c.npz"]
    for name in names:
        (tmp_path / name).write_bytes(OLD)
    with pytest.raises(OutputError, match="c.npz"):
        with atomic.Batch() as batch:
            for name in names:
                batch.add(tmp_path / name)
            for name in names[:2]:
                with atomic.replacing(tmp_path / name, batch=batch) as temp:
                    temp.write_text("new")
            with atomic.replacing(tmp_path / "c.npz", batch=batch) as temp:
                raise OSError(27, "File too large")
    assert _files(tmp_path) == dict.fromkeys(names, OLD)
    with atomic.Batch() as batch:
        for name in names:
            with atomic.replacing(tmp_path / name, batch=batch) as temp:
                temp.write_text("new")
        assert _files(tmp_path) == dict.fromkeys(names, OLD) | {
            p.name: b"new" for p in tmp_path.iterdir() if p.name.startswith(".")
        }
        assert batch.commit() == [tmp_path / n for n in names]
    assert _files(tmp_path) == dict.fromkeys(names, b"new")


def test_a_batch_commit_refuses_an_output_never_written(tmp_path):
    with atomic.Batch() as batch:
        batch.add(tmp_path / "a.txt", "--a")
        batch.add(tmp_path / "b.txt", "--b")
        with atomic.replacing(tmp_path / "a.txt", batch=batch) as temp:
            temp.write_text("new")
        with pytest.raises(OutputError, match="not written: --b"):
            batch.commit()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["folder", "device", "fifo"])
def test_targets_that_are_not_regular_files_are_refused(tmp_path, kind):
    if kind == "folder":
        target = tmp_path / "folder"
        target.mkdir()
    elif kind == "device":
        target = Path("/dev/null")
        if not target.exists():
            pytest.skip("no /dev/null")
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs")
        target = tmp_path / "pipe"
        os.mkfifo(target)
    with pytest.raises(OutputError, match="folder|not a regular file"):
        with atomic.replacing(target) as temp:
            temp.write_text("new")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    if kind == "device":
        assert Path("/dev/null").is_char_device()


def test_an_output_equal_to_an_input_is_refused_however_spelled(tmp_path):
    source = _scene(tmp_path / "level.obj")
    before = source.read_bytes()
    (tmp_path / "sub").mkdir()
    os.symlink(source, tmp_path / "link.obj")
    for spelling in [source, tmp_path / "sub" / ".." / "level.obj", tmp_path / "link.obj"]:
        with pytest.raises(OutputError, match="it is the input"):
            atomic.check_target(spelling, inputs=[source])
    assert source.read_bytes() == before


def test_ensure_suffix_names_files_as_numpy_does(tmp_path):
    for name in ["out", "out.npz", "out.tar"]:
        written = atomic.ensure_suffix(tmp_path / name, ".npz")
        np.savez_compressed(tmp_path / name, a=np.zeros(1))
        assert written.exists()


# --- the core CLI --------------------------------------------------------------------------


@pytest.mark.parametrize("failing", ["obj", "json"])
def test_bake_on_a_full_disk_keeps_both_old_files(tmp_path, failing):
    source = _scene(tmp_path / "level.obj")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    ok = _run_cli(
        ["bake", str(source), "--out", str(fresh / "n.obj"), "--json", str(fresh / "n.json")]
    )
    assert ok.returncode == 0, ok.stderr
    obj_size = (fresh / "n.obj").stat().st_size
    json_size = (fresh / "n.json").stat().st_size
    assert json_size > obj_size  # so a limit between them fails only the last output
    limit = obj_size // 2 if failing == "obj" else (obj_size + json_size) // 2
    out = tmp_path / "out"
    out.mkdir()
    (out / "n.obj").write_bytes(OLD)
    (out / "n.json").write_bytes(OLD)
    proc = _run_cli(
        ["bake", str(source), "--out", str(out / "n.obj"), "--json", str(out / "n.json")], limit
    )
    assert _files(out) == {"n.obj": OLD, "n.json": OLD}  # no temp left either
    assert proc.returncode == 1, proc.stderr
    assert f"n.{failing}" in proc.stderr and "File too large" in proc.stderr
    assert "wrote" not in proc.stdout


def test_dump_on_a_full_disk_keeps_the_old_npz(tmp_path):
    source = _scene(tmp_path / "level.obj")
    (tmp_path / "d.npz").write_bytes(OLD)
    proc = _run_cli(["dump", str(source), "--out", str(tmp_path / "d.npz")], 4096)
    assert (tmp_path / "d.npz").read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.npz", "level.obj"]
    assert proc.returncode == 1, proc.stderr
    assert "d.npz" in proc.stderr and "File too large" in proc.stderr


def test_dump_prints_the_name_it_writes(tmp_path, capsys):
    source = _scene(tmp_path / "level.obj")
    assert main(["dump", str(source), "--out", str(tmp_path / "d")]) == 0
    assert f"to {tmp_path / 'd.npz'}\n" in capsys.readouterr().out
    assert (tmp_path / "d.npz").exists() and not (tmp_path / "d").exists()


@pytest.mark.parametrize("flag", ["--out", "--json"])
def test_an_output_equal_to_the_input_mesh_is_refused_before_baking(
    tmp_path, monkeypatch, capsys, flag
):
    source = _scene(tmp_path / "level.obj")
    before = source.read_bytes()
    baked = []
    real_bake = pipeline.bake
    monkeypatch.setattr(pipeline, "bake", lambda *a, **k: baked.append(1) or real_bake(*a, **k))
    other = str(tmp_path / ("nav.obj" if flag == "--json" else "nav.json"))
    argv = ["bake", str(source), flag, str(tmp_path / "." / "level.obj")]
    argv += ["--json" if flag == "--out" else "--out", other]
    assert main(argv) == 1
    assert "it is the input" in capsys.readouterr().err
    assert baked == [] and source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["level.obj"]


def test_cli_refuses_a_folder_or_device_as_output(tmp_path, capsys):
    source = _scene(tmp_path / "level.obj")
    (tmp_path / "folder.obj").mkdir()
    assert main(["bake", str(source), "--out", str(tmp_path / "folder.obj")]) == 1
    assert "it is a folder" in capsys.readouterr().err
    if Path("/dev/null").exists():
        out = str(tmp_path / "n.obj")
        assert main(["bake", str(source), "--out", out, "--json", "/dev/null"]) == 1
        assert "not a regular file" in capsys.readouterr().err
        assert Path("/dev/null").is_char_device()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.obj", "level.obj"]


@pytest.mark.parametrize("command", ["bake", "query"])
def test_an_output_ending_with_a_separator_names_no_file(tmp_path, capsys, command):
    """``bake --out nav.obj/`` wrote the file nav.obj, and ``query --out ans/`` a file ans,
    where the README says such a path names no file (as ``dump --out dir/`` was refused)."""
    source = _scene(tmp_path / "level.obj")
    (tmp_path / "ans").write_bytes(OLD)
    if command == "bake":
        argv = ["bake", str(source), "--out", str(tmp_path / "nav.obj") + os.sep]
    else:
        queries = tmp_path / "q.npz"
        points = np.array([[0, 0, 0], [3, 3, 0]], np.float32)
        np.savez(
            queries, q_points=points, q_pairs=np.array([[0, 1]], np.int32),
            q_ray_start=np.array([0], np.int32), q_ray_end=points[1:],
            q_half_extents=np.ones(3, np.float32),
        )  # fmt: skip
        argv = ["query", str(source), "--queries", str(queries), "--out", f"{tmp_path / 'ans'}/"]
    assert main(argv) == 1
    assert "it names a folder (it ends with a separator" in capsys.readouterr().err
    assert (tmp_path / "ans").read_bytes() == OLD and not (tmp_path / "nav.obj").exists()
    for name in ("", f"{tmp_path / 'nav.obj'}/.", f"{tmp_path}/sub/.."):
        with pytest.raises(OutputError, match="names a folder"):
            atomic.check_target(name)


def test_wrote_names_the_file_written_through_a_linked_folder(tmp_path, capsys):
    """``--out link/../x.obj`` with link -> sub/deep wrote sub/x.obj and printed ./x.obj."""
    source = _scene(tmp_path / "level.obj")
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "sub" / "deep")
    assert main(["bake", str(source), "--out", f"{tmp_path}/link/../x.obj"]) == 0
    assert f"wrote {tmp_path / 'sub' / 'x.obj'}\n" in capsys.readouterr().out
    assert (tmp_path / "sub" / "x.obj").is_file() and not (tmp_path / "x.obj").exists()


def test_two_outputs_naming_one_file_are_refused(tmp_path, capsys):
    source = _scene(tmp_path / "level.obj")
    out = str(tmp_path / "n.obj")
    assert main(["bake", str(source), "--out", out, "--json", out]) == 1
    assert "names the same file" in capsys.readouterr().err


def test_bake_writes_both_outputs_and_names_them(tmp_path, capsys):
    source = _scene(tmp_path / "level.obj")
    (tmp_path / "n.obj").write_bytes(OLD)
    assert main(["bake", str(source), "--out", str(tmp_path / "n.obj"),
                 "--json", str(tmp_path / "n.json")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'n.obj'}\n" in out and f"wrote {tmp_path / 'n.json'}\n" in out
    assert json.loads((tmp_path / "n.json").read_text())["format"] == "voxnav-navmesh"
    assert (tmp_path / "n.obj").read_bytes() != OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["level.obj", "n.json", "n.obj"]


def test_output_errors_are_voxnav_errors():
    assert issubclass(OutputError, VoxNavError)


def test_a_long_legal_file_name_is_written(tmp_path):
    """A 244-byte target name (NAME_MAX is 255) made a temp name 14 + extension bytes longer:
    'File name too long', so the file could not be written at all."""
    target = tmp_path / ("n" * 240 + ".obj")
    with atomic.open_replacing(target, "w") as fh:
        fh.write("ok\n")
    assert target.read_text() == "ok\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]
    wide = tmp_path / ("é" * 120 + ".json")  # 244 bytes in UTF-8: cut on a character's bytes
    with atomic.open_replacing(wide, "w") as fh:
        fh.write("{}")
    assert wide.read_text() == "{}"


def test_a_name_longer_than_name_max_is_refused_before_any_work(tmp_path):
    target = tmp_path / ("n" * 252 + ".obj")  # 256 bytes
    with pytest.raises(VoxNavError, match="its file name is longer than 255 bytes"):
        with atomic.Batch() as batch:
            batch.add(target, "--out")
    assert list(tmp_path.iterdir()) == []
