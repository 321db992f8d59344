"""The ``voxnav`` batch command of the installed extension, and its preview picture."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from . import harness


def _png_pixels(bpy, path):
    img = bpy.data.images.load(str(path), check_existing=False)
    try:
        w, h = img.size
        px = np.empty(w * h * 4, np.float32)
        img.pixels.foreach_get(px)
    finally:
        bpy.data.images.remove(img)
    return px.reshape(h, w, 4)[..., :3]


def _saturated_fraction(rgb) -> float:
    """Fraction of clearly coloured pixels (the overlay; geometry and background are grey)."""
    return float(((rgb.max(axis=2) - rgb.min(axis=2)) > 0.3).mean())


def test_cli_bad_path_and_bad_arguments_fail(bpy, ext, tmp_path, capsys):
    assert ext.cli.main([str(tmp_path / "missing.blend"), "--obj", str(tmp_path / "x.obj")]) != 0
    assert "no such .blend file" in capsys.readouterr().err
    assert ext.cli.main(["--demo", "--set", "cell_size=abc"]) != 0
    assert ext.cli.main(["--demo", "--set", "no_such_setting=1"]) != 0
    assert ext.cli.main(["--demo", "--set", "cell_size=-1"]) != 0
    assert ext.cli.main(["--demo", "--obj", str(tmp_path / "no" / "dir" / "x.obj")]) != 0
    assert ext.cli.main(["--no-such-flag"]) != 0
    assert not (tmp_path / "x.obj").exists()
    bpy.ops.wm.read_homefile(use_empty=True)
    assert ext.cli.main([]) != 0  # an empty scene: nothing to bake
    assert "nothing to bake" in capsys.readouterr().err


def test_cli_non_blend_inputs_and_huge_worker_counts_are_named(bpy, ext, tmp_path, capsys):
    # An OBJ or an empty file as FILE.blend hit the "unexpected RuntimeError" catch-all, and
    # --workers past the panel's 256 an "unexpected ValueError" from the property.
    obj = tmp_path / "level.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    empty = tmp_path / "empty.blend"
    empty.write_bytes(b"")
    for given in (obj, empty):
        assert ext.cli.main([str(given), "--obj", str(tmp_path / "x.obj")]) == 1
        err = capsys.readouterr().err
        assert f"cannot open {given} as a .blend file" in err and "unexpected" not in err
    assert ext.cli.main(["--demo", "--tile-size", "32", "--workers", "99999999999"]) == 2
    assert "--workers: must be at most 256" in capsys.readouterr().err
    assert ext.cli.main(["--demo", "--obj", ""]) == 2  # it baked and wrote nothing, exit 0
    assert "--obj needs a file name" in capsys.readouterr().err
    assert not (tmp_path / "x.obj").exists()


def test_cli_writes_every_output_and_a_readable_picture(bpy, ext, tmp_path):
    out = {
        "save-blend": tmp_path / "baked.blend",
        "npz": tmp_path / "voxels.npz",
        "obj": tmp_path / "navmesh.obj",
        "png": tmp_path / "preview.png",
        "json": tmp_path / "navmesh.json",
    }
    argv = ["--demo", "--set", "cell_size=0.25", "--resolution", "480x270"]
    for flag, path in out.items():
        argv += [f"--{flag}", str(path)]
    assert ext.cli.main(argv) == 0
    for path in out.values():
        assert path.stat().st_size > 0, path
    assert bpy.context.scene.voxnav.cell_size == np.float32(0.25)

    data = np.load(out["npz"])
    assert int(data["count_voxels"]) == int((data["smax"].astype(np.int64) - data["smin"]).sum())
    assert data["col_start"].shape == (int(data["width"]) * int(data["height"]) + 1,)
    text = out["obj"].read_text()
    assert "\nv " in text and "\nf " in text

    rgb = _png_pixels(bpy, out["png"])
    assert rgb.shape == (270, 480, 3)
    assert rgb.std() > 0.05  # not blank
    coloured = _saturated_fraction(rgb)
    assert coloured > 0.03, coloured

    # The same view without the overlay has (almost) no such colours: they are the navmesh's.
    bpy.ops.wm.open_mainfile(filepath=str(out["save-blend"]))
    scene = bpy.context.scene
    assert ext.writeback.NAVMESH_NAME in bpy.data.objects
    assert ext.writeback.VOXELS_NAME in bpy.data.objects
    scene.voxnav.show_navmesh = False
    scene.voxnav.show_voxels = False
    hf_lo = np.array([-12.5, -8.5, -0.5])
    hf_hi = np.array([12.5, 8.5, 3.5])
    bare = tmp_path / "bare.png"
    ext.cli.render_preview(scene, str(bare), hf_lo, hf_hi, (480, 270))
    assert _saturated_fraction(_png_pixels(bpy, bare)) < coloured / 4


def test_cli_voxels_only_writes_the_walkable_overlay(bpy, ext, tmp_path):
    obj = tmp_path / "overlay.obj"
    assert ext.cli.main(["--demo", "--voxels-only", "--obj", str(obj)]) == 0
    lines = obj.read_text().splitlines()
    faces = [ln for ln in lines if ln.startswith("f ")]
    assert faces and all(len(f.split()) == 5 for f in faces)  # one quad per walkable span top
    assert bpy.context.scene.voxnav.last_stage == "heightfield"


def test_harness_demo_bakes_and_leaves_no_temp_folders_or_egl_noise(built_zip, tmp_path):
    """`harness.py demo` as `.ci/run demo` runs it, in a process of its own (this wheel)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    env["TMPDIR"] = str(scratch)
    out = tmp_path / "demo_out"
    cmd = [sys.executable, harness.__file__, "demo", "--out", str(out), "--resolution", "320x180"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for path in harness.demo_outputs(out).values():
        assert path.stat().st_size > 0, path
    assert "polys" in proc.stdout and "EGL" not in proc.stdout + proc.stderr
    assert not list(scratch.iterdir())  # voxnav_dist_* and voxnav_user_* are gone


def test_filtered_stderr_drops_only_the_egl_noise(tmp_path):
    """What C code writes to file descriptor 2 goes through the filter too."""
    script = tmp_path / "noisy.py"
    script.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(harness.__file__).parent)!r})\n"
        "import harness\n"
        "with harness.filtered_stderr() as dropped:\n"
        "    os.write(2, b'EGL Error (0x3009): EGL_BAD_MATCH: Arguments are inconsistent.\\n')\n"
        "    os.write(2, b'a real problem\\n')\n"
        "    print('python stderr', file=sys.stderr)\n"
        "    os.write(2, b'EGL Error (0x3009): EGL_BAD_MATCH: again\\nno newline at the end')\n"
        "print('dropped', dropped[0])\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "a real problem\npython stderr\nno newline at the end"
    assert proc.stdout == "dropped 2\n"


OLD = b"the previous file\n"

_FULL_DISK = """
import json, os, resource, signal, sys
sys.path.insert(0, sys.argv[1])
from tests.blender import harness
import bpy

cli = harness.cli_module(harness.install_extension(sys.argv[2]))
runs, probe = json.loads(sys.argv[3]), sys.argv[4]
base = ["--demo", "--set", "cell_size=0.5", "--resolution", "320x180"]


def bake(outputs, limit=None):
    bpy.ops.wm.read_homefile(use_empty=True)
    argv = base + [item for flag_path in outputs.items() for item in flag_path]
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    if limit is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        return cli.main(argv)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))


# The sizes of a good run's OBJ and .blend, for a limit between them (only the .blend fails).
sizes = {"--obj": os.path.join(probe, "n.obj"), "--save-blend": os.path.join(probe, "b.blend")}
assert bake(sizes) == 0
obj_size, blend_size = (os.path.getsize(p) for p in sizes.values())
assert obj_size < blend_size, (obj_size, blend_size)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
codes = {}
for name, outputs in runs.items():
    codes[name] = bake(outputs, 2048 if len(outputs) == 1 else (obj_size + blend_size) // 2)
print("CODES " + json.dumps(codes))
"""


def test_cli_full_disk_keeps_every_old_file(built_zip, tmp_path):
    """Blender reports success on a truncated .blend or PNG: the CLI must not replace the old
    files with them, and must exit 1. With several outputs, the OBJ written before the failing
    .blend must not replace its old file either."""
    import json
    import os
    import subprocess
    import sys

    out = tmp_path / "out"
    probe = tmp_path / "probe"
    out.mkdir()
    probe.mkdir()
    runs = {
        "blend": {"--save-blend": str(out / "baked.blend")},
        "png": {"--png": str(out / "preview.png")},
        "obj+blend": {"--obj": str(out / "nav.obj"), "--save-blend": str(out / "baked.blend")},
    }
    for name in ("baked.blend", "preview.png", "nav.obj"):
        (out / name).write_bytes(OLD)
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"))
    proc = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(harness.REPO), str(built_zip), json.dumps(runs),
         str(probe)],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert {p.name: p.read_bytes() for p in out.iterdir()} == dict.fromkeys(
        ("baked.blend", "preview.png", "nav.obj"), OLD
    ), proc.stderr[-2000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("CODES ")]
    assert line, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads(line[0][6:]) == {"blend": 1, "png": 1, "obj+blend": 1}
    assert "cannot write --save-blend" in proc.stderr and "cannot write --png" in proc.stderr


def test_cli_refuses_an_output_equal_to_the_input_blend_before_baking(
    bpy, ext, tmp_path, capsys, monkeypatch
):
    source = tmp_path / "level.blend"
    ext.demo.build_demo(bpy.context.scene)
    bpy.ops.wm.save_as_mainfile(filepath=str(source), copy=True)
    before = source.read_bytes()
    bakes = []
    monkeypatch.setattr(ext.bake, "bake_scene", lambda *a, **k: bakes.append(1))
    same = str(tmp_path / "." / "level.blend")
    for flag in ("--obj", "--save-blend", "--json"):
        assert ext.cli.main([str(source), flag, same]) == 1, flag
        assert "it is the input" in capsys.readouterr().err
    # The .blend open in this session is an input too (blender level.blend --command voxnav).
    bpy.ops.wm.open_mainfile(filepath=str(source))
    assert ext.cli.main(["--obj", str(source)]) == 1
    assert "it is the input" in capsys.readouterr().err
    assert bakes == [] and source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["level.blend"]


def test_cli_reports_the_names_it_writes(bpy, ext, tmp_path, capsys):
    argv = ["--demo", "--voxels-only", "--set", "cell_size=0.5", "--resolution", "160x90"]
    argv += ["--npz", str(tmp_path / "vox"), "--png", str(tmp_path / "shot")]
    assert ext.cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'vox.npz'}\n" in out and f"wrote {tmp_path / 'shot.png'}\n" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shot.png", "vox.npz"]


def test_cli_refuses_conflicting_or_impossible_flags_before_baking(bpy, ext, tmp_path, capsys):
    cases = [
        (["--resolution", "0x0", "--png", str(tmp_path / "a.png")], "each side must be 4..65536"),
        (["--voxels-only", "--json", str(tmp_path / "b.json")], "--json writes the navmesh"),
        ([str(tmp_path)], "is a folder: give a .blend file"),
    ]
    for argv, words in cases:
        code = ext.cli.main(argv if argv[0] == str(tmp_path) else ["--demo", *argv])
        assert code in (1, 2) and words in capsys.readouterr().err, argv
    assert not any(tmp_path.iterdir())


def test_empty_navmesh_line_points_at_warnings_only_when_there_are_some(bpy, ext, capsys):
    # A tiled bake whose bounds miss the geometry said "see the warning above" over none.
    from types import SimpleNamespace

    scene = SimpleNamespace(voxnav=SimpleNamespace(last_message="Empty navmesh"))
    ext.cli._print_empty(scene, SimpleNamespace(warnings=[]))
    assert "see the warning above" not in capsys.readouterr().err
    ext.cli._print_empty(scene, SimpleNamespace(warnings=["bounds miss the geometry"]))
    assert "(Empty navmesh; see the warning above" in capsys.readouterr().err


@pytest.mark.parametrize("size", [2.0, 20.0, 10000.0])
def test_preview_camera_clips_to_the_framed_box_however_large(bpy, ext, size):
    """The --png camera's clip range holds every corner of the box it frames (a fixed 10000
    far plane left a 100 m level in a centimetre scene, 10000 units, beyond it: blank)."""
    import importlib

    from mathutils import Vector

    cli = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.cli")
    lo, hi = (0.0, 0.0, 0.0), (size, size * 0.8, size * 0.1)
    cam = cli.frame_camera(bpy.context.scene, lo, hi)
    corners = [Vector([(lo, hi)[s[i]][i] for i in range(3)]) for s in np.ndindex(2, 2, 2)]
    reach = [(c - cam.location).length for c in corners]
    assert cam.data.clip_start < min(reach) and max(reach) < cam.data.clip_end


def _blend_linking(bpy, tmp_path, name: str, make) -> tuple[Path, Path]:
    """(main.blend, library.blend): ``make()`` builds the library's object ``name``; the main
    file links it (and has a floor of its own)."""
    lib, main = tmp_path / "library.blend", tmp_path / "main.blend"
    bpy.ops.wm.read_homefile(use_empty=True)
    make()
    bpy.context.active_object.name = name
    bpy.ops.wm.save_as_mainfile(filepath=str(lib))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.mesh.primitive_plane_add(size=10)
    with bpy.data.libraries.load(str(lib), link=True) as (_src, dst):
        dst.objects = [name]
    for obj in dst.objects:
        bpy.context.scene.collection.objects.link(obj)
    bpy.ops.wm.save_as_mainfile(filepath=str(main))
    bpy.ops.wm.read_homefile(use_empty=True)
    return main, lib


def test_cli_never_writes_over_a_linked_library(bpy, ext, tmp_path, capsys):
    """--save-blend naming a library the input links from replaced it (exit 0) with a copy
    of the main scene linking itself: the library's objects were lost."""
    main, lib = _blend_linking(
        bpy, tmp_path, "LibWall", lambda: bpy.ops.mesh.primitive_cube_add(size=2)
    )
    before = lib.read_bytes()
    assert ext.cli.main([str(main), "--save-blend", str(lib)]) == 1
    assert f"it is the input {lib}" in capsys.readouterr().err
    assert lib.read_bytes() == before


def test_cli_names_a_missing_linked_library(bpy, ext, tmp_path, capsys):
    """A wall linked from a library that has gone was baked around silently (exit 0)."""
    main, lib = _blend_linking(
        bpy, tmp_path, "Wall", lambda: bpy.ops.mesh.primitive_cube_add(size=2, location=(0, 0, 1))
    )
    lib.unlink()
    assert ext.cli.main([str(main), "--obj", str(tmp_path / "nav.obj")]) == 0
    err = capsys.readouterr().err
    assert f"voxnav: warning: linked library {lib} is missing" in err


@pytest.mark.parametrize("flag", ["--npz", "--png"])
def test_cli_an_output_ending_with_a_separator_is_refused(bpy, ext, tmp_path, capsys, flag):
    """--npz out/ wrote an empty hidden out/.npz (the data left in a stray temp file); --png
    out/ failed as an 'incomplete png' and left its picture in a temp file."""
    (tmp_path / "out").mkdir()
    target = str(tmp_path / "out") + os.sep
    assert ext.cli.main(["--demo", flag, target]) == 1
    assert "it names a folder (it ends with a separator)" in capsys.readouterr().err
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("point", ["nan,0,0", "1e400,0,0", "1e10,0,0"])
def test_cli_a_bad_reachable_point_is_a_usage_error(bpy, ext, tmp_path, capsys, point):
    """It was exit 1 (a failed bake), after every tile had baked with --tile-size."""
    out = tmp_path / "nav.obj"
    assert ext.cli.main(["--demo", "--reachable-from", point, "--obj", str(out)]) == 2
    assert "--reachable-from needs finite coordinates" in capsys.readouterr().err
    assert not out.exists()


def test_cli_each_agent_s_json_holds_its_own_test_path(bpy, ext, tmp_path):
    """With --agent and --json every agent's file listed the first agent's path."""
    import json

    argv = ["--demo", "--agent", "thin:radius=0.2", "--agent", "wide:radius=1.0",
            "--path", "-8,-4,0:8,4,0", "--json", str(tmp_path / "nav.json")]  # fmt: skip
    assert ext.cli.main(argv) == 0
    docs = {n: json.loads((tmp_path / f"nav_{n}.json").read_text()) for n in ("thin", "wide")}
    alone = {}
    for name, radius in (("thin", 0.2), ("wide", 1.0)):
        bpy.ops.wm.read_homefile(use_empty=True)  # no agent rows
        target = tmp_path / f"alone_{name}.json"
        argv = ["--demo", "--set", f"agent_radius={radius}", "--path", "-8,-4,0:8,4,0"]
        assert ext.cli.main([*argv, "--json", str(target)]) == 0
        alone[name] = json.loads(target.read_text())["paths"]
    assert docs["thin"]["paths"] == alone["thin"] and docs["wide"]["paths"] == alone["wide"]
    assert docs["thin"]["paths"] != docs["wide"]["paths"]


def test_cli_picture_options_without_a_picture_are_said(bpy, ext, tmp_path, capsys):
    """--resolution and --png-voxels without --png were dropped silently; --png-voxels with
    tiles drew nothing of what it asked for."""
    out = tmp_path / "nav.obj"
    assert ext.cli.main(["--demo", "--resolution", "64x36", "--png-voxels", "--obj", str(out)]) == 0
    err = capsys.readouterr().err
    assert "--resolution and --png-voxels set(s) up the --png picture" in err
    argv = ["--demo", "--tile-size", "32", "--png-voxels", "--png", str(tmp_path / "p.png")]
    assert ext.cli.main(argv) == 2
    assert "--png-voxels with --tile-size 32" in capsys.readouterr().err


def test_cli_tiled_outputs_of_its_own_are_checked_before_the_tiles_bake(
    bpy, ext, tmp_path, capsys, monkeypatch
):
    """The tile cache written beside --save-blend (and one OBJ per agent) was checked only
    after every tile had baked: a name too long for the file system failed then."""
    blend = tmp_path / ("b" * 236 + ".blend")  # the .blend fits; its tile cache's name not

    def no_bake(*args, **kwargs):
        raise AssertionError("the tiles baked before the outputs were checked")

    monkeypatch.setattr(ext.bake, "bake_scene", no_bake)
    argv = ["--demo", "--tile-size", "32", "--save-blend", str(blend)]
    assert ext.cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "--save-blend (tile cache)" in err and "longer than 255 bytes" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "flags",
    [["--set", "agent_max_slope=89.995"], ["--agent", "b:max_slope=89.995"]],
)
def test_cli_a_setting_the_panel_would_clamp_is_a_usage_error(bpy, ext, tmp_path, capsys, flags):
    # The core takes any slope below 90 degrees; the panel holds 89.99 at most, and Blender
    # clamped the value: the bake ran on another slope than given, exit 0, no word.
    out = tmp_path / "nav.obj"
    assert ext.cli.main(["--demo", *flags, "--obj", str(out)]) == 2
    err = capsys.readouterr().err
    assert "89.995 is beyond what the panel holds (it would bake 89.99)" in err
    assert not out.exists()
    assert ext.cli.main(["--demo", "--set", "agent_max_slope=89.98", "--obj", str(out)]) == 0
