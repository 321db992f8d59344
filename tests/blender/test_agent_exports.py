"""Agent types in exports: with agent rows, Export Navmesh and the batch command's --obj/--json
write one file per agent (its name before the extension), each that agent's navmesh; the batch
command's --agent sets the rows."""

from __future__ import annotations

import json

import pytest

from .scenes import box


def _add_agent(bpy, name: str, radius: float):
    assert bpy.ops.voxnav.agent_add() == {"FINISHED"}
    row = bpy.context.scene.voxnav.agents[-1]
    row.name = name
    row.radius = radius


def _polys(path) -> int:
    return len(json.loads(path.read_text())["polygons"])


def test_export_operator_writes_one_file_per_agent(bpy, ext, tmp_path):
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    box(bpy, "Post", (-0.5, -0.5, 0), (0.5, 0.5, 3))
    _add_agent(bpy, "small", 0.3)
    _add_agent(bpy, "large", 1.2)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    outcome = ext.bake.LAST[bpy.context.scene.session_uid]
    assert bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "nav.json"), file_format="JSON")
    assert not (tmp_path / "nav.json").exists()
    for name in ("small", "large"):
        path = tmp_path / f"nav_{name}.json"
        assert _polys(path) == outcome.agents[name].polymesh.npolys
    for fmt in ("OBJ", "BIN"):
        suffix = "." + fmt.lower()
        assert bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / f"n{suffix}"), file_format=fmt)
        assert sorted(p.name for p in tmp_path.glob(f"n_*{suffix}")) == [
            f"n_large{suffix}",
            f"n_small{suffix}",
        ]


def test_batch_command_agents_write_one_file_per_agent(bpy, ext, tmp_path, capsys):
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    out = tmp_path / "nav.json"
    argv = ["--agent", "small:radius=0.3", "--agent", "large:radius=1.2", "--json", str(out)]
    assert ext.cli.main(argv) == 0, capsys.readouterr().err
    rows = bpy.context.scene.voxnav.agents
    assert [r.name for r in rows] == ["small", "large"]
    assert not out.exists()
    small, large = _polys(tmp_path / "nav_small.json"), _polys(tmp_path / "nav_large.json")
    assert small > 0 and large > 0
    text = capsys.readouterr().out
    assert "nav_small.json" in text and "nav_large.json" in text


@pytest.mark.parametrize("spec, needle", [("s:wide=1", "unknown key"), ("bad name", "agent name")])
def test_batch_command_bad_agent_exits_2(bpy, ext, tmp_path, capsys, spec, needle):
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    assert ext.cli.main(["--agent", spec, "--json", str(tmp_path / "n.json")]) == 2
    assert needle in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_batch_command_refuses_an_agent_file_another_output_names(bpy, ext, tmp_path, capsys):
    # --obj c.obj writes c_a.obj for agent "a", which --json c_a.obj also names: the agent's
    # OBJ went through --json's reservation and was lost (exit 0, "c_a.obj" never written).
    box(bpy, "Floor", (-6, -6, -0.5), (6, 6, 0))
    argv = ["--agent", "a:radius=0.3", "--agent", "b:radius=0.6"]
    argv += ["--obj", str(tmp_path / "c.obj"), "--json", str(tmp_path / "c_a.obj")]
    assert ext.cli.main(argv) == 1
    assert "c_a.obj names the same file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
