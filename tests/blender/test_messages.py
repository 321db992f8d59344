"""Warnings and messages in Blender: operator reports, the Last Bake panel, the batch command's
exit codes (0 ok, 1 bake or I/O error, 2 usage), and the settings docs behind the tooltips."""

from __future__ import annotations

import importlib
import re
import types

import numpy as np
import pytest


def quad(bpy, name, size=10.0, z=0.0, facing_up=True):
    """A square floor; counter-clockwise seen from above (normal up) unless ``facing_up`` is
    False (as after Flip Normals)."""
    s = size / 2
    verts = [(-s, -s, z), (s, -s, z), (s, s, z), (-s, s, z)]
    face = (0, 1, 2, 3) if facing_up else (3, 2, 1, 0)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], [face])
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


class _Recorder:
    """A panel layout that records the text of every label drawn."""

    def __init__(self, texts):
        object.__setattr__(self, "texts", texts)

    def __getattr__(self, name):
        def method(*args, **kwargs):
            if name == "label":
                self.texts.append(kwargs.get("text", ""))
            return _Recorder(self.texts)

        return method

    def __setattr__(self, name, value):
        pass


def panel_text(ext, bpy) -> list[str]:
    panels = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.panels")
    texts: list[str] = []
    context = types.SimpleNamespace(scene=bpy.context.scene)
    panels.VOXNAV_PT_figures.draw(types.SimpleNamespace(layout=_Recorder(texts)), context)
    return texts


class Reports:
    """The operator reports Blender prints in background mode ("Warning: ...", "Info: ...")."""

    def __init__(self, capfd):
        self.capfd = capfd

    def clear(self) -> None:
        self.capfd.readouterr()

    def __call__(self, level: str = "WARNING") -> list[str]:
        out, err = self.capfd.readouterr()
        prefix = {"WARNING": "Warning: ", "INFO": "Info: ", "ERROR": "Error: "}[level]
        return [ln[len(prefix) :] for ln in (out + err).splitlines() if ln.startswith(prefix)]


@pytest.fixture
def reports(capfd):
    return Reports(capfd)


def test_empty_navmesh_warns_in_report_and_panel_and_keeps_the_previous_result(bpy, ext, reports):
    floor = quad(bpy, "Floor")
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    settings = bpy.context.scene.voxnav
    navmesh = bpy.data.objects[ext.writeback.NAVMESH_NAME]
    polygons_before = len(navmesh.data.polygons)
    figures_before = {item.name: item.count for item in settings.last_counts}
    assert polygons_before > 0 and figures_before["polys"] > 0
    assert len(settings.last_warnings) == 0
    assert not reports()

    # Flip the floor: every face points down, nothing is walkable.
    floor.data.flip_normals()
    floor.data.update()
    reports.clear()
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    warnings = reports()
    assert any("2 of 2 triangles face down" in w for w in warnings), warnings
    assert any("only up-facing surfaces are walkable" in w for w in warnings)
    assert any("previous result is kept" in w for w in warnings)
    # The panel lists the warning; the previous result and its figures stay.
    assert [w.text for w in settings.last_warnings] and "face down" in settings.last_warnings[
        0
    ].text
    text = " ".join(panel_text(ext, bpy))
    assert "face down" in text and "previous result is kept" in text
    navmesh = bpy.data.objects[ext.writeback.NAVMESH_NAME]
    assert len(navmesh.data.polygons) == polygons_before
    assert {item.name: item.count for item in settings.last_counts} == figures_before

    # A good bake again clears the warnings.
    floor.data.flip_normals()
    floor.data.update()
    reports.clear()
    bpy.ops.voxnav.build_navmesh()
    assert len(settings.last_warnings) == 0 and settings.last_message == ""
    assert not reports()
    assert "face down" not in " ".join(panel_text(ext, bpy))


def test_an_addon_warning_reaches_report_and_panel_too(bpy, ext, reports):
    quad(bpy, "Floor")
    bpy.context.scene.voxnav.max_voxels_drawn = 5
    bpy.ops.voxnav.voxelize()
    warnings = reports()
    assert warnings and "drawing" in warnings[0]
    assert any("drawing" in line for line in panel_text(ext, bpy))


def test_empty_navmesh_on_the_first_bake_creates_nothing(bpy, ext, reports):
    quad(bpy, "Floor", facing_up=False)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert not ext.writeback.output_objects(bpy.context.scene)
    assert "nothing baked" in bpy.context.scene.voxnav.last_message
    assert any("face down" in msg for msg in reports())


def test_tooltips_and_limits_come_from_the_settings_docs(bpy, ext):
    settings_doc = importlib.import_module(f"{ext.root.__name__}.core.settings_doc")
    NavConfig = ext.config.NavConfig
    rna = bpy.context.scene.voxnav.bl_rna.properties
    for name in NavConfig.field_names():
        assert rna[name].description == settings_doc.tooltip(name), name
        doc = NavConfig.doc(name)
        if rna[name].type == "FLOAT" and rna[name].subtype == "DISTANCE" and doc.lo is not None:
            assert rna[name].hard_min == pytest.approx(doc.lo + (0.001 if doc.lo_open else 0))
            assert rna[name].hard_max == pytest.approx(doc.hi), name
    assert rna["memory_limit"].hard_max * 1024**2 == NavConfig.doc("memory_limit").hi
    assert rna["verts_per_poly"].hard_min == 3 and rna["verts_per_poly"].hard_max == 6


# ------------------------------------------------------------------------- batch command


def run_cli(ext, capsys, *argv):
    code = ext.cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ("cell_size=1e-46", "cell_size must be from 0.001 to 1000 wu"),
        ("cell_size=0.0001", "cell_size must be from 0.001 to 1000 wu"),
        ("memory_limit=1e30", "memory_limit must be from 1 MiB to 1 PiB"),
        ("memory_limit=lots", "memory_limit must be a size such as 4GB"),
        ("agent_radius=1e39", "not representable in float32"),
        ("verts_per_poly=nan", "verts_per_poly must be a whole number"),
        ("partition=monotne", "did you mean monotone?"),
        ("cellsize=0.2", "did you mean cell_size?"),
        ("filter_ledge_spans=maybe", "filter_ledge_spans must be on or off"),
    ],
)
def test_cli_bad_settings_are_usage_errors(bpy, ext, capsys, setting, words):
    code, _, err = run_cli(ext, capsys, "--set", setting)
    assert code == 2, err
    assert words in err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1
    assert bpy.context.scene.voxnav.cell_size == np.float32(0.3)  # nothing clamped or applied


def test_cli_unknown_flag_gets_a_close_match(bpy, ext, capsys):
    code, _, err = run_cli(ext, capsys, "--pgn", "x.png")
    assert code == 2 and "did you mean --png?" in err


def test_cli_human_memory_limit_monotone_and_the_png_path_written(bpy, ext, capsys, tmp_path):
    quad(bpy, "Floor")
    code, out, err = run_cli(ext, capsys, "--set", "memory_limit=4GB", "--set",
                             "partition=monotone", "--png", tmp_path / "pic",
                             "--resolution", "64x36")  # fmt: skip
    assert code == 0, err
    assert bpy.context.scene.voxnav.memory_limit == 4096
    assert bpy.context.scene.voxnav.partition == "monotone"
    assert (tmp_path / "pic.png").is_file()
    assert f"wrote {tmp_path / 'pic.png'}" in out


def test_cli_empty_navmesh_is_exit_1_and_writes_nothing(bpy, ext, capsys, tmp_path):
    quad(bpy, "Floor", facing_up=False)
    code, _, err = run_cli(ext, capsys, "--obj", tmp_path / "nav.obj")
    assert code == 1
    assert "warning: the navigation mesh is empty (0 polygons)" in err and "face down" in err
    assert "nothing written" in err
    assert not (tmp_path / "nav.obj").exists()


def test_cli_unexpected_exception_is_one_line_and_a_verbose_hint(bpy, ext, capsys, monkeypatch):
    quad(bpy, "Floor")

    def broken(*args, **kwargs):
        raise KeyError("nobody foresaw this")

    monkeypatch.setattr(ext.bake, "bake_scene", broken)
    code, _, err = run_cli(ext, capsys)
    assert code == 1
    assert [ln for ln in err.splitlines() if "error:" in ln] == [
        "voxnav: error: unexpected KeyError: 'nobody foresaw this'"
    ]
    assert "rerun with --verbose" in err and "Traceback" not in err
    code, _, err = run_cli(ext, capsys, "--verbose")
    assert code == 1 and "Traceback" in err


def test_cli_help_lists_every_setting_with_its_docs(bpy, ext, capsys):
    code, out, _ = run_cli(ext, capsys, "--help")
    assert code == 0
    for name in ext.config.NavConfig.field_names():
        assert f"  {name}\n" in out
    assert "limits: 0.001 to 1000" in out and "exit codes: 0 success" in out


def test_path_length_and_pruned_area_follow_the_scene_unit_scale(bpy, ext, reports):
    """A centimetre scene (Unit Scale 0.01, Length in centimetres): a 12-unit path reads 12 cm,
    not "12.00 m"."""
    panels = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.panels")
    live = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.live")
    scene = bpy.context.scene
    scene.unit_settings.system = "METRIC"
    scene.unit_settings.scale_length = 0.01
    scene.unit_settings.length_unit = "CENTIMETERS"
    quad(bpy, "Floor", size=20.0)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    reports.clear()
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}
    length = scene.voxnav.path_length
    assert length > 10
    info = " ".join(reports("INFO"))
    assert f"{length:.2f} m" not in info and " cm" in info
    texts: list[str] = []
    context = types.SimpleNamespace(scene=scene)
    panels.VOXNAV_PT_path_test.draw(types.SimpleNamespace(layout=_Recorder(texts)), context)
    assert any(t.startswith("Length: ") and t.endswith(" cm") for t in texts), texts
    assert live.scene_units_text(scene, 250.0, "AREA") == "250.00 cm²"
    scene.unit_settings.length_unit = "ADAPTIVE"  # Blender's own pick per value
    assert live.scene_units_text(scene, 250.0, "AREA") == bpy.utils.units.to_string(
        "METRIC", "AREA", 0.025, precision=2
    )
    scene.unit_settings.system = "NONE"
    assert live.scene_units_text(scene, 12.0) == "12.00"


def test_path_length_follows_a_chosen_length_unit(bpy, ext):
    """Length set to Centimeters still read "6.50 m" (the adaptive unit)."""
    live = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.live")
    units = bpy.context.scene.unit_settings
    units.system = "METRIC"
    units.length_unit = "CENTIMETERS"
    assert live.scene_units_text(bpy.context.scene, 6.5) == "650.00 cm"
    assert live.scene_units_text(bpy.context.scene, 2.0, "AREA") == "20000.00 cm²"
    units.system, units.length_unit = "IMPERIAL", "FEET"
    assert live.scene_units_text(bpy.context.scene, 0.3048) == "1.00 ft"
    units.length_unit = "ADAPTIVE"
    assert live.scene_units_text(bpy.context.scene, 0.3048).strip() != ""


def test_a_navmesh_detour_cannot_hold_replaces_nothing(bpy, ext, monkeypatch):
    """Detour's limits (65535 detail vertices a tile: a 180 m terrain at a fine detail) were
    met after the voxels and overlay were replaced: the viewport showed the refused bake
    while the figures, the Path Test and Export kept the previous one."""
    live = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.live")
    quad(bpy, "Floor")
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    scene = bpy.context.scene
    shown = {o.name: len(o.data.vertices) for o in ext.writeback.output_objects(scene)}
    stored, token = scene[live.NAVMESH_KEY], scene.voxnav.bake_token

    def too_large(result):
        raise ext.root.core.errors.VoxNavError(
            "a Detour tile holds at most 65535 detail vertices, this one needs 77969"
        )

    monkeypatch.setattr(live, "_result_tile", too_large)
    quad(bpy, "Upper", size=30.0, z=3.0)
    with pytest.raises(RuntimeError, match="65535 detail vertices"):
        bpy.ops.voxnav.build_navmesh()
    assert {o.name: len(o.data.vertices) for o in ext.writeback.output_objects(scene)} == shown
    assert (scene[live.NAVMESH_KEY], scene.voxnav.bake_token) == (stored, token)


@pytest.mark.parametrize(
    ("role", "flag", "value", "needle"),
    [
        ("Area Volume", "area_volume", float("nan"), "NaN or infinite position or size"),
        ("Area Volume", "area_volume", 1e30, "reaches 1e+30 m from the origin"),
        ("Dynamic Obstacle", "dynamic_obstacle", float("nan"), "NaN or infinite position"),
        ("Reachable From", "reachable_from", float("nan"), "NaN or infinite position"),
        ("Reachable From", "reachable_from", 1e20, "reaches 1e+20 m from the origin"),
    ],
)
def test_a_marked_object_far_or_at_nan_is_named(bpy, ext, role, flag, value, needle):
    """Refused by the core without a name ("a box area volume needs two points ...; got 2
    point(s)", "reachable-from points must be finite numbers"): which object was it?"""
    quad(bpy, "Floor")
    marked = bpy.data.objects.new("Marker", None)
    bpy.context.scene.collection.objects.link(marked)
    setattr(marked.voxnav, flag, True)
    marked.location.x = value
    with pytest.raises(RuntimeError, match=f"{role} 'Marker' .*{re.escape(needle)}"):
        bpy.ops.voxnav.build_navmesh()


def test_a_flat_area_volume_is_warned_about(bpy, ext, reports):
    """A plane ticked Area Volume (area 0) lying on the floor marked nothing, silently."""
    quad(bpy, "Floor", size=20.0)
    zone = quad(bpy, "Zone", size=6.0)
    zone.voxnav.area_volume, zone.voxnav.area_id = True, 0
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert any("Area Volume(s) 'Zone' are flat" in w for w in reports())
    settings = bpy.context.scene.voxnav
    assert any("'Zone' are flat" in w.text for w in settings.last_warnings)
    reports.clear()
    bpy.data.objects.remove(zone)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert not any("are flat" in w for w in reports())
