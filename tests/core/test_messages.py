"""Issue 10 "Why" 5/4: every message a new user trips on, with its exit code and key words.

Exit codes of both command lines: 0 ok, 1 bake or I/O error (an empty navmesh included),
2 usage (bad flags or settings).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from core import pipeline
from core.__main__ import build_parser, main
from core.config import NavConfig, parse_size
from core.context import BuildContext
from core.errors import VoxNavError
from core.objio import read_obj

# A 10 x 10 floor in an OBJ (Y-up): counter-clockwise seen from above, so its normal is up.
FLOOR_UP = "v 0 0 0\nv 10 0 0\nv 10 0 10\nv 0 0 10\nf 1 3 2\nf 1 4 3\n"
# The same floor wound the other way (Flip Normals): it faces down.
FLOOR_DOWN = "v 0 0 0\nv 10 0 0\nv 10 0 10\nv 0 0 10\nf 1 2 3\nf 1 3 4\n"


@pytest.fixture
def floor_obj(tmp_path):
    path = tmp_path / "floor.obj"
    path.write_text(FLOOR_UP)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "error:" in line]


# ------------------------------------------------------------------------- empty navmesh


def test_faces_pointing_down_are_named_in_the_api_and_the_cli(tmp_path, capsys):
    down = tmp_path / "down.obj"
    down.write_text(FLOOR_DOWN)
    verts, tris = read_obj(down, recast_frame=False)
    result = pipeline.bake(verts, tris)
    assert result.empty and result.counts["polys"] == 0
    assert len(result.warnings) == 1
    assert "2 of 2 triangles face down" in result.warnings[0]
    assert "only up-facing surfaces are walkable" in result.warnings[0]
    assert "Recalculate Outside" in result.warnings[0]

    out = tmp_path / "nav.obj"
    out.write_text("previous navmesh")
    code, _, err = run(capsys, "bake", down, "--out", out)
    assert code == 1
    assert "warning: the navigation mesh is empty (0 polygons): 2 of 2 triangles face down" in err
    assert "nothing written" in err
    assert out.read_text() == "previous navmesh"  # not replaced by nothing


def test_bounds_that_miss_the_geometry(floor_obj, tmp_path, capsys):
    code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj",
                       "--bounds-min", 50, 50, 50, "--bounds-max", 60, 60, 60)  # fmt: skip
    assert code == 1
    assert "the bounds (50, 50, 50)..(60, 60, 60) miss the geometry" in err
    assert "move or widen the bounds" in err
    assert not (tmp_path / "n.obj").exists()


def test_agent_wider_than_every_passage(floor_obj, tmp_path, capsys):
    code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj",
                       "--agent-radius", 6)  # fmt: skip
    assert code == 1
    assert "the agent is wider than every passage: agent_radius 6 erodes all" in err
    assert "lower agent_radius" in err


def test_a_good_bake_has_no_warning_and_exit_0(floor_obj, tmp_path, capsys):
    code, out, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj")
    assert code == 0 and "warning" not in err and "error" not in err
    assert f"wrote {tmp_path / 'n.obj'}" in out
    assert (tmp_path / "n.obj").read_text().count("\nf ") >= 1


def test_down_facing_count_is_exact():
    verts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 1], [0, 1, 3], [2, 1, 0]])
    assert pipeline.count_down_facing(verts, tris) == 2  # the wall counts as neither


def test_given_context_collects_timings_and_warnings_and_is_the_result_s():
    verts = np.array([[0, 0, 0], [9, 0, 0], [9, 9, 0], [0, 9, 0]], np.float32)
    ctx = BuildContext()
    seen = []
    result = pipeline.bake(verts, [[0, 2, 1], [0, 3, 2]], progress=lambda f, s: seen.append(s),
                           ctx=ctx)  # fmt: skip
    assert result.warnings is ctx.warnings and result.timings is ctx.timings
    assert list(ctx.timings) == list(pipeline.STAGES)
    assert seen[0] == "mark" and seen[-1] == "done"
    assert "face down" in ctx.warnings[0]


# ------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4GB", 4 * 1024**3), ("512MiB", 512 * 1024**2), ("4G", 4 * 1024**3), ("1073741824", 1024**3),
     ("1.5 GiB", 3 * 1024**3 // 2), (2**21, 2**21), ("8gb", 8 * 1024**3),
     ("1PiB", 1024**5)],  # the limit's own unit, refused until 2026-11-27
)  # fmt: skip
def test_memory_limits_in_human_units(text, expected):
    assert parse_size(text) == expected
    assert NavConfig(memory_limit=text).validate().memory_limit == expected
    assert NavConfig().replace(memory_limit=text).memory_limit == expected


def test_memory_limit_flag_takes_units(floor_obj, tmp_path, capsys):
    code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj",
                       "--memory-limit", "4GB")  # fmt: skip
    assert code == 0, err
    code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj",
                       "--memory-limit", "lots")  # fmt: skip
    assert code == 2
    assert "memory_limit must be a size such as 4GB, 512MiB, 4G" in err


def test_unknown_flag_gets_a_close_match(floor_obj, capsys):
    code, _, err = run(capsys, "bake", floor_obj, "--out", "x.obj", "--cellsize", "0.2")
    assert code == 2
    assert "unrecognized arguments: --cellsize" in err and "did you mean --cell-size?" in err
    code, _, err = run(capsys, "bkae", floor_obj)
    assert code == 2 and "did you mean bake?" in err
    with pytest.raises(VoxNavError, match="did you mean cell_size"):
        NavConfig().replace(cellsize=0.2)


def test_another_commands_flag_is_named_as_such(floor_obj, capsys):
    """`path ... --out x.obj` was told "did you mean --out?" (its own spelling, from bake's
    flags) and pointed to the top-level help."""
    code, _, err = run(capsys, "path", floor_obj, "--from", "0", "0", "0", "--to", "1", "1",
                       "0", "--out", "x.obj")  # fmt: skip
    assert code == 2 and "did you mean" not in err
    assert "--out is an option of dump, bake, query, not of path" in err
    assert "(see python -m core path --help)" in err and "usage: python -m core path" in err
    code, _, err = run(capsys, "path", floor_obj, "--from", "0", "0", "0", "--to", "1", "1",
                       "0", "--ou", "x.obj")  # fmt: skip
    assert "--out is an option of dump, bake, query, not of path" in err  # argparse's prefix
    code, _, err = run(capsys, "bake", floor_obj, "--out", "x.obj", "--tile-sise", "16")
    assert "did you mean --tile-size? (see python -m core bake --help)" in err


@pytest.mark.parametrize(
    ("setting", "value", "words"),
    [
        ("cell_size", 1e-46, "cell_size must be from 0.001 to 1000 wu"),
        ("cell_size", 0.0001, "cell_size must be from 0.001 to 1000 wu"),
        ("cell_height", 1e39, "cell_height must be from 0.001 to 1000 wu"),
        ("agent_radius", 1e39, "agent_radius must be from 0 to 100000 wu"),
        ("agent_max_climb", -1, "agent_max_climb must be from 0 to 100000 wu"),
        ("verts_per_poly", math.nan, "verts_per_poly must be a whole number from 3 to 6"),
        ("verts_per_poly", math.inf, "verts_per_poly must be a whole number from 3 to 6"),
        ("verts_per_poly", 4.5, "verts_per_poly must be a whole number from 3 to 6"),
        ("agent_max_slope", 90, "agent_max_slope must be from 0 to 90 (90 excluded) degrees"),
        ("edge_max_error", math.nan, "edge_max_error must be from 0 to 100000 wu"),
        ("memory_limit", 10**30, "memory_limit must be from 1 MiB to 1 PiB"),
        ("partition", "monotne", "did you mean monotone?"),
    ],
)
def test_settings_are_checked_in_the_precision_they_are_used_in(setting, value, words):
    with pytest.raises(VoxNavError) as info:
        NavConfig(**{setting: value}).validate()
    assert words in str(info.value)
    assert "got" in str(info.value)


def test_float32_overflow_is_named(floor_obj, tmp_path, capsys):
    for flag, value in (("--cell-size", "1e-46"), ("--agent-radius", "1e39")):
        code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj", flag, value)
        assert code == 2, err
        assert "not representable in float32" in err and "must be from" in err
        assert len(error_lines(err)) == 1
    code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj",
                       "--verts-per-poly", "nan")  # fmt: skip
    assert code == 2 and "verts_per_poly must be a whole number" in err


def test_bools_and_text_are_coerced_the_same_everywhere():
    assert NavConfig(filter_ledge_spans="off").validate().filter_ledge_spans is False
    assert NavConfig(filter_ledge_spans="On").filter_ledge_spans is True
    assert NavConfig(filter_ledge_spans=0).filter_ledge_spans is False
    assert NavConfig.parse("filter_ledge_spans", "no") is False
    with pytest.raises(VoxNavError, match="filter_ledge_spans must be on or off"):
        NavConfig(filter_ledge_spans="maybe").validate()
    with pytest.raises(VoxNavError, match="filter_ledge_spans must be on or off"):
        NavConfig(filter_ledge_spans=2).validate()
    assert NavConfig(cell_size="0.2").cell_size == 0.2
    assert NavConfig.parse("partition", "Monotone") == "monotone"
    assert NavConfig.parse("bounds_min", "-5,-5,-1") == (-5.0, -5.0, -1.0)
    # One NumPy number (0-d array) raised a raw "iteration over a 0-d array".
    with pytest.raises(VoxNavError, match="bounds_min and bounds_max must each be three"):
        NavConfig(bounds_min=np.array(0.3), bounds_max=(1, 1, 1)).validate()
    with pytest.raises(VoxNavError, match="bounds_min must be three numbers"):
        NavConfig.parse("bounds_min", "1,2")


def test_box_area_volume_with_one_point_is_refused():
    verts = np.array([[0, 0, 0], [9, 0, 0], [9, 9, 0], [0, 9, 0]], np.float32)
    volume = pipeline.AreaVolume("box", ((1, 1, 0),), area=0)
    with pytest.raises(VoxNavError, match=r"a box area volume needs two points .* got 1 point"):
        pipeline.bake(verts, [[0, 1, 2], [0, 2, 3]], volumes=(volume,))


# ------------------------------------------------------------------------- commands


def test_bench_arguments_are_checked(tmp_path, capsys):
    code, _, err = run(capsys, "bench", "--runs", "0")
    assert code == 2 and "--runs: must be at least 1, got 0" in err
    code, _, err = run(capsys, "bench", "--meshes", tmp_path / "WRONG", "--runs", "1")
    assert code == 1
    assert "--meshes" in err and "WRONG" in err and "dungeon.obj" in err


def test_dump_reports_the_path_it_wrote(floor_obj, tmp_path, capsys):
    code, out, _ = run(capsys, "dump", floor_obj, "--out", tmp_path / "name", "--heightfield-only")
    assert code == 0
    assert f"to {tmp_path / 'name.npz'}" in out
    assert (tmp_path / "name.npz").is_file() and not (tmp_path / "name").exists()


def test_missing_input_and_output_folders_are_io_errors(floor_obj, tmp_path, capsys):
    code, _, err = run(capsys, "bake", tmp_path / "none.obj", "--out", tmp_path / "n.obj")
    assert code == 1 and "cannot read OBJ" in err
    code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "no" / "n.obj")
    assert code == 1 and "output folder" in err and "does not exist" in err


def test_unexpected_exception_is_one_line_and_a_verbose_hint(floor_obj, tmp_path, capsys,
                                                             monkeypatch):  # fmt: skip
    def broken(*args, **kwargs):
        raise RuntimeError("something nobody foresaw")

    monkeypatch.setattr(pipeline, "bake", broken)
    code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj")
    assert code == 1
    assert error_lines(err) == ["voxnav: error: unexpected RuntimeError: something nobody foresaw"]
    assert "rerun with --verbose" in err and "Traceback" not in err
    code, _, err = run(capsys, "bake", floor_obj, "--out", tmp_path / "n.obj", "--verbose")
    assert code == 1 and "Traceback" in err and "something nobody foresaw" in err


def test_help_documents_every_setting_with_unit_default_and_limits(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    text = sub.choices["bake"].format_help()
    flat = re.sub(r"\s+", " ", text)
    for name in NavConfig.field_names():
        assert "--" + name.replace("_", "-") in text
        doc = NavConfig.doc(name)
        assert re.sub(r"\s+", " ", doc.meaning) in flat, name
        if doc.limits():
            assert f"limits: {doc.limits()}" in flat, name
    assert "default: 0.3" in flat and "unit: wu" in flat and "default: 4GiB" in flat
    assert "exit codes: 0 success; 1" in flat


# ------------------------------------------------------------------------- docs from one source


def test_readme_holds_the_generated_settings_table_and_json_format():
    from core import settings_doc

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert settings_doc.markdown_table() in readme
    assert settings_doc.json_format() in readme
    assert settings_doc.update_readme(readme) == readme
    for name in NavConfig.field_names():
        assert f"| `{name}` |" in readme
    assert "| 2 | usage:" in readme and "Only up-facing surfaces are walkable" in readme


def test_every_setting_is_documented_with_a_range_or_limits():
    for name in NavConfig.field_names():
        doc = NavConfig.doc(name)
        assert doc.meaning and doc.label and doc.limits(), name
        default = NavConfig.default(name)
        if doc.lo is not None:  # the default itself is inside the working range
            NavConfig(**{name: default}).validate()


def test_an_unwritable_output_is_one_error_line_and_exit_1(floor_obj, tmp_path, capsys):
    (tmp_path / "taken.npz").mkdir()  # a folder where the file should go
    code, _, err = run(capsys, "dump", floor_obj, "--out", tmp_path / "taken.npz")
    assert code == 1
    assert error_lines(err) == [f"voxnav: error: cannot write --out {tmp_path / 'taken.npz'}: "
                                "it is a folder; give a file name"]  # fmt: skip
    assert "Traceback" not in err


def test_floors_too_narrow_for_the_watershed_are_not_blamed_on_region_min_size(tmp_path):
    """A 1 x 1 m floor at cell_size 0.25 (four walkable spans, all on an edge): the watershed
    starts no region, and the message said to lower region_min_size, already 0."""
    verts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    config = NavConfig(cell_size=0.25, agent_radius=0.0, region_min_size=0, region_merge_size=0)
    result = pipeline.bake(verts, tris, config)
    assert result.empty and result.counts["regions"] == 0
    text = " ".join(result.warnings)
    assert "too narrow for the watershed" in text and "lower region_min_size" not in text
    assert not pipeline.bake(verts, tris, config.replace(partition="monotone")).empty
