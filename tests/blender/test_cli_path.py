"""The batch command's --path: the straight path in the JSON, the picture and the .blend."""

from __future__ import annotations

import json

from . import harness


def test_demo_path_in_json_png_and_blend(bpy, ext, tmp_path, capsys):
    out = tmp_path / "out.json"
    png = tmp_path / "out.png"
    blend = tmp_path / "out.blend"
    demo = ext.demo
    spec = ",".join(map(str, demo.PATH_START)) + ":" + ",".join(map(str, demo.PATH_GOAL))
    assert spec.replace(".0", "") == harness.DEMO_PATH
    argv = ["--demo", "--path", spec, "--json", str(out), "--png", str(png)]
    argv += ["--save-blend", str(blend), "--resolution", "320x180"]
    assert ext.cli.main(argv) == 0
    doc = json.loads(out.read_text())
    (path,) = doc["paths"]
    assert path["status"] == "reached"
    assert path["start"] == list(demo.PATH_START) and path["goal"] == list(demo.PATH_GOAL)
    assert len(path["points"]) >= 3 and path["points"][-1][2] > 2.9  # up on the platform
    assert path["length"] > 10 and path["polygons"] >= 3
    assert png.stat().st_size > 0
    assert "path (1.0, -2.0, 0.0) -> (-10.0, 4.0, 3.0): reached" in capsys.readouterr().out
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    assert bpy.data.objects.get("VoxNav Path") is not None


def test_bad_path_option_is_a_usage_error(ext, capsys):
    assert ext.cli.main(["--demo", "--path", "1,2:3,4,5"]) == 2
    assert "--path expects START:GOAL" in capsys.readouterr().err
    assert ext.cli.main(["--demo", "--voxels-only", "--path", "0,0,0:1,1,0"]) == 2
    assert "needs a navmesh" in capsys.readouterr().err


def test_coordinates_may_start_with_a_minus_sign(ext, tmp_path):
    out = tmp_path / "out.json"
    goal = ",".join(map(str, ext.demo.PATH_START))
    start = ",".join(map(str, ext.demo.PATH_GOAL))  # -10,4,3: starts with a minus sign
    assert ext.cli.main(["--demo", "--path", f"{start}:{goal}", "--json", str(out)]) == 0
    assert ext.cli.join_coordinate_values(["--path", "-1,2,3:4,5,6", "--demo"]) == [
        "--path=-1,2,3:4,5,6",
        "--demo",
    ]
    # "-.5" too (argparse took it for an option: "expected one argument").
    assert ext.cli.join_coordinate_values(["--reachable-from", "-.5,1,0"]) == [
        "--reachable-from=-.5,1,0"
    ]
