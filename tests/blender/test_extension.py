"""The installed extension in headless Blender: manifest, gather, operators, writeback."""

from __future__ import annotations

import importlib
import zipfile

import numpy as np
import pytest

from . import harness
from .scenes import box


def figures(bpy):
    settings = bpy.context.scene.voxnav
    return {item.name: item.count for item in settings.last_counts}


# --------------------------------------------------------------------------------- manifest


def test_manifest_validates_and_zip_holds_only_the_extension(built_zip):
    assert "Success" in harness.validate()
    assert built_zip.name == "voxnav-0.1.0.zip"
    names = zipfile.ZipFile(built_zip).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert "voxnav_addon/operators.py" in names and "core/pipeline.py" in names
    forbidden = ("tests/", ".venv/", ".git/", "dist/", "demo_out/", "__pycache__", ".ci/")
    assert not [n for n in names if n.startswith(forbidden) or "__pycache__" in n]


def test_installed_not_source(ext):
    assert ext.root.__name__ == "bl_ext.user_default.voxnav"
    assert "extensions" in ext.gather.__file__ and "/tests/" not in ext.gather.__file__
    addon = importlib.import_module(f"{ext.root.__name__}.voxnav_addon")
    assert addon._cli_handle is not None  # `blender --command voxnav` is registered


# --------------------------------------------------------------------------------- gather


def test_gather_handles_modifiers_instances_negative_scale_and_hidden(bpy, ext):
    scene = bpy.context.scene
    # Array modifier: 3 copies of a 12-triangle box.
    arr = box(bpy, "Arrayed", (0, 0, 0), (1, 1, 1))
    mod = arr.modifiers.new("Array", "ARRAY")
    mod.count = 3
    # Collection instance of a collection that is not linked to the scene.
    src = bpy.data.collections.new("Props")
    box(bpy, "Prop", (0, 0, 0), (1, 1, 0.5), collection=src)
    for i in range(2):
        empty = bpy.data.objects.new(f"PropInstance{i}", None)
        empty.instance_type = "COLLECTION"
        empty.instance_collection = src
        empty.location = (5 + 2 * i, 0, 0)
        scene.collection.objects.link(empty)
    # A mirrored floor (negative determinant) and a hidden object.
    box(bpy, "Mirrored", (0, 0, -0.2), (4, 4, 0), location=(-1, 5, 0), scale=(-1, 1, 1))
    hidden = box(bpy, "Hidden", (0, 0, 0), (1, 1, 1))
    hidden.hide_set(True)
    # Geometry Nodes instances: VoxNav's own box-on-points node group on a user object.
    points = bpy.data.meshes.new("Points")
    points.vertices.add(5)
    points.vertices.foreach_set("co", np.array([[i, -5, 0] for i in range(5)], np.float32).ravel())
    points.attributes.new("voxnav_height", "FLOAT", "POINT").data.foreach_set("value", [1.0] * 5)
    gn = bpy.data.objects.new("GN Boxes", points)
    gn.modifiers.new("Boxes", "NODES").node_group = ext.writeback._voxel_node_group()
    scene.collection.objects.link(gn)

    g = ext.gather.gather(bpy.context)
    counts = {name: int((g.tri_source == i).sum()) for i, name in enumerate(g.sources)}
    assert counts == {
        "Arrayed": 36,
        "PropInstance0": 12,
        "PropInstance1": 12,
        "Mirrored": 12,
        "GN Boxes": 5 * 12,
    }
    assert g.verts.dtype == np.float32 and g.tris.dtype == np.int32
    # Instances sit where their empties are.
    inst = g.verts[g.tris[g.tri_source == g.sources.index("PropInstance1")]]
    assert inst[..., 0].min() == pytest.approx(7.0) and inst[..., 0].max() == pytest.approx(8.0)
    # The mirrored box keeps outward (here: upward on top) normals, so its top is walkable.
    t = g.tris[g.tri_source == g.sources.index("Mirrored")]
    a, b, c = (g.verts[t[:, i]].astype(np.float64) for i in range(3))
    normals = np.cross(b - a, c - a)
    centers = (a + b + c) / 3
    top = np.isclose(centers[:, 2], 0.0)
    assert top.sum() == 2 and (normals[top, 2] > 0).all()
    mirrored_x = g.verts[t][..., 0]
    assert mirrored_x.min() == pytest.approx(-5.0) and mirrored_x.max() == pytest.approx(-1.0)
    # Selected-only and collection sources.
    bpy.ops.object.select_all(action="DESELECT")
    arr.select_set(True)
    assert ext.gather.gather(bpy.context, "SELECTED").sources == ["Arrayed"]
    assert ext.gather.gather(bpy.context, "COLLECTION", src).sources == []


def test_collection_source_tells_a_library_object_from_a_local_one_of_its_name(bpy, ext, tmp_path):
    """Geometry = Collection picked objects by name: a library's "Floor" linked into the
    scene was baked with the chosen collection's own "Floor" (and the other way round)."""
    shelf = bpy.data.collections.new("SetPiece")
    bpy.context.scene.collection.children.link(shelf)
    box(bpy, "Floor", (45, -5, -0.5), (55, 5, 0), collection=shelf)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "lib.blend"))
    bpy.ops.wm.read_homefile(use_empty=True)
    level = bpy.data.collections.new("Level")
    bpy.context.scene.collection.children.link(level)
    box(bpy, "Floor", (-5, -5, -0.5), (5, 5, 0), collection=level)
    with bpy.data.libraries.load(str(tmp_path / "lib.blend"), link=True) as (_src, dst):
        dst.collections = ["SetPiece"]
    linked = dst.collections[0]
    bpy.context.scene.collection.children.link(linked)
    for collection, (lo, hi), name in ((level, (-5, 5), "Floor"),
                                       (linked, (45, 55), "Floor [lib.blend]")):  # fmt: skip
        g = ext.gather.gather(bpy.context, "COLLECTION", collection)
        assert g.sources == [name] and g.tris.shape[0] == 12
        assert (g.verts[:, 0].min(), g.verts[:, 0].max()) == (lo, hi)
    assert ext.gather.gather(bpy.context, "VISIBLE").sources == ["Floor", "Floor [lib.blend]"]


def test_gather_leaves_out_an_instancer_not_shown_in_the_viewport(bpy, ext):
    """A particle emitter with "Show Instancer: Viewport" off: the depsgraph still yields it
    (for its particles) but does not draw it; its mesh was baked as a floor all the same."""
    emitter = box(bpy, "Emitter", (-5, -5, -0.1), (5, 5, 0))
    leaf = box(bpy, "Leaf", (0, 0, 0), (0.2, 0.2, 0.2), location=(30, 0, 0))
    emitter.modifiers.new("Particles", "PARTICLE_SYSTEM")
    settings = emitter.particle_systems[0].settings
    settings.type, settings.count = "HAIR", 10
    settings.render_type, settings.instance_object = "OBJECT", leaf
    counts = lambda g: {n: int((g.tri_source == i).sum()) for i, n in enumerate(g.sources)}  # noqa: E731
    assert counts(ext.gather.gather(bpy.context)) == {"Emitter": 12 + 10 * 12, "Leaf": 12}
    emitter.show_instancer_for_viewport = False
    assert counts(ext.gather.gather(bpy.context)) == {"Emitter": 10 * 12, "Leaf": 12}


def _link(bpy, name, data, location=(0, 0, 0), collection=None):
    obj = bpy.data.objects.new(name, data)
    obj.location = location
    (collection or bpy.context.scene.collection).objects.link(obj)
    return obj


def _own_triangles(bpy, obj) -> np.ndarray:
    """World corners float64 (m, 3, 3) of the triangles of ``obj``'s evaluated mesh, as Blender
    itself evaluates it (``to_mesh``), sorted by centroid."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.to_mesh()
    try:
        mesh.calc_loop_triangles()
        co = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        tri = np.empty(len(mesh.loop_triangles) * 3, np.int32)
        mesh.loop_triangles.foreach_get("vertices", tri)
    finally:
        evaluated.to_mesh_clear()
    matrix = np.array(evaluated.matrix_world, dtype=np.float64)
    world = co.reshape(-1, 3).astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3]
    return _by_centroid(world[tri.reshape(-1, 3)])


def _by_centroid(corners: np.ndarray) -> np.ndarray:
    centroid = corners.mean(axis=1).round(4)
    return corners[np.lexsort(centroid.T[::-1])]


def test_gather_counts_curve_text_surface_and_metaball_triangles_once(bpy, ext):
    """Each evaluated geometry once: the depsgraph yields a curve-type object *and* its mesh."""
    scene = bpy.context.scene
    curve = bpy.data.curves.new("Rail", "CURVE")
    curve.dimensions = "3D"
    spline = curve.splines.new("BEZIER")
    spline.bezier_points.add(1)
    spline.bezier_points[0].co = (0, 0, 0)
    spline.bezier_points[1].co = (3, 1, 0)
    curve.bevel_depth = 0.2
    curve.extrude = 0.1
    rail = _link(bpy, "Rail", curve)
    arrayed = _link(bpy, "Arrayed Rail", curve.copy(), location=(0, 4, 0))
    arrayed.modifiers.new("Array", "ARRAY").count = 3
    text = bpy.data.curves.new("Sign", "FONT")
    text.body = "VoxNav"
    text.extrude = 0.1
    sign = _link(bpy, "Sign", text, location=(0, 10, 0))
    ball = bpy.data.metaballs.new("Blob")
    ball.elements.new().radius = 1.0
    blob = _link(bpy, "Blob", ball, location=(0, -5, 0))
    bpy.ops.surface.primitive_nurbs_surface_sphere_add(location=(8, 0, 0))
    sphere = bpy.context.active_object
    # A text instanced twice from a collection outside the scene.
    props = bpy.data.collections.new("Signs")
    plaque = _link(bpy, "Plaque", text.copy(), collection=props)
    for i in range(2):
        empty = _link(bpy, f"Plaque Instance {i}", None, location=(0, 20 + 3 * i, 0))
        empty.instance_type = "COLLECTION"
        empty.instance_collection = props

    g = ext.gather.gather(bpy.context)
    counts = {name: int((g.tri_source == i).sum()) for i, name in enumerate(g.sources)}
    own = {obj.name: _own_triangles(bpy, obj) for obj in (rail, arrayed, sign, blob, sphere)}
    plaque_count = len(_own_triangles(bpy, plaque))
    assert all(len(t) > 0 for t in own.values()) and plaque_count > 0
    assert len(own["Arrayed Rail"]) == 3 * len(own["Rail"])
    assert counts == {
        **{name: len(t) for name, t in own.items()},
        "Plaque Instance 0": plaque_count,
        "Plaque Instance 1": plaque_count,
    }
    # And they are the same triangles, where Blender puts them.
    for name, expected in own.items():
        tri = g.tris[g.tri_source == g.sources.index(name)]
        got = _by_centroid(g.verts[tri].astype(np.float64))
        np.testing.assert_allclose(got, expected, atol=1e-4, err_msg=name)
    assert scene.objects.get("Plaque") is None


def test_gather_skips_voxnav_output(bpy, ext):
    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    before = ext.gather.gather(bpy.context).triangle_count
    bpy.ops.voxnav.build_navmesh()
    assert ext.writeback.output_objects(bpy.context.scene)
    assert ext.gather.gather(bpy.context).triangle_count == before


# --------------------------------------------------------------------------------- operators


def test_voxel_counts_equal_the_core_on_the_same_triangles(bpy, ext):
    ext.demo.build_demo(bpy.context.scene)
    bpy.ops.voxnav.voxelize()
    got = figures(bpy)
    g = ext.gather.gather(bpy.context)
    config = ext.properties.to_config(bpy.context.scene.voxnav)
    ref = ext.pipeline.bake(g.verts, g.tris, config, stop_after="heightfield")
    hf = ref.heightfield
    voxels = int((hf.smax.astype(np.int64) - hf.smin).sum())
    assert got["triangles"] == g.triangle_count
    assert got["voxels"] == voxels
    assert got["spans"] == hf.span_count
    assert got["walkable_spans"] == int(np.count_nonzero(hf.area))
    assert bpy.context.scene.voxnav.last_stage == "heightfield"
    # Every voxel is drawn (under the cap): one point per voxel.
    vox = bpy.data.objects[ext.writeback.VOXELS_NAME]
    assert len(vox.data.vertices) == voxels


def test_voxel_cap_draws_span_tops_first_and_warns(bpy, ext):
    box(bpy, "Block", (0, 0, 0), (3, 3, 3))
    settings = bpy.context.scene.voxnav
    settings.max_voxels_drawn = 150
    outcome = ext.bake.bake_scene(bpy.context, "heightfield")
    vox = bpy.data.objects[ext.writeback.VOXELS_NAME]
    assert 0 < len(vox.data.vertices) <= 150 < outcome.counts["voxels"]
    assert outcome.warnings and "drawing" in outcome.warnings[0]
    settings.voxel_display = "SPANS"  # redraws the last bake at once
    assert len(vox.data.vertices) == min(150, outcome.counts["spans"])
    settings.max_voxels_drawn = 10**6
    assert len(vox.data.vertices) == outcome.counts["spans"]
    settings.voxel_display = "VOXELS"
    assert len(vox.data.vertices) == outcome.counts["voxels"]
    assert settings.last_message == ""


def _instance_extents(bpy, obj):
    """World-space (x, y, z) extent float64 (k, 3) of every evaluated instance ``obj`` makes."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    extents = []
    for inst in depsgraph.object_instances:
        if not inst.is_instance or inst.parent is None or inst.parent.original != obj:
            continue
        mesh = inst.object.data
        co = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        matrix = np.array(inst.matrix_world, dtype=np.float64)
        world = co.reshape(-1, 3).astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3]
        extents.append(world.max(axis=0) - world.min(axis=0))
    return np.array(extents).reshape(-1, 3)


@pytest.mark.parametrize("cell_size", [0.2, 0.35])
def test_voxel_box_width_reaches_the_modifier(bpy, ext, cell_size):
    box(bpy, "Block", (0, 0, 0), (2, 2, 1))
    settings = bpy.context.scene.voxnav
    settings.cell_size = cell_size
    bpy.ops.voxnav.voxelize()
    vox = bpy.data.objects[ext.writeback.VOXELS_NAME]
    mod = vox.modifiers["VoxNav Boxes"]
    width_id = mod.node_group.interface.items_tree["Box Width"].identifier
    width = settings.cell_size * ext.writeback.BOX_SHRINK
    assert ext.writeback.modifier_input(mod, width_id) == pytest.approx(width)
    # What Blender evaluates: one box per voxel, that wide and 0.9 cell heights tall.
    extents = _instance_extents(bpy, vox)
    assert extents.shape[0] == len(vox.data.vertices) == figures(bpy)["voxels"]
    np.testing.assert_allclose(extents[:, 0], width, rtol=1e-5)
    np.testing.assert_allclose(extents[:, 1], width, rtol=1e-5)
    height = settings.cell_height * ext.writeback.BOX_SHRINK
    np.testing.assert_allclose(extents[:, 2], height, rtol=1e-5)


def test_overlay_lies_on_the_floors(bpy, ext):
    box(bpy, "Low Floor", (-6, -6, 1.0), (6, 6, 1.5))
    box(bpy, "High Floor", (10, -6, 3.5), (20, 6, 4.0))
    bpy.ops.voxnav.build_navmesh()
    settings = bpy.context.scene.voxnav
    nav = bpy.data.objects[ext.writeback.NAVMESH_NAME]
    co = np.empty(len(nav.data.vertices) * 3, np.float32)
    nav.data.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    assert co.shape[0] > 0 and len(nav.data.polygons) > 0
    lift = ext.bake.overlay_lift(settings.cell_height)
    tol = settings.cell_height + lift + 1e-4
    low = (co[:, 0] < 8) & (co[:, 2] >= 1.5) & (co[:, 2] <= 1.5 + tol)
    high = (co[:, 0] > 8) & (co[:, 2] >= 4.0) & (co[:, 2] <= 4.0 + tol)
    assert (low | high).all()
    assert low.any() and high.any()
    # Inside the floors, eroded by the agent radius.
    r = settings.agent_radius - settings.cell_size
    assert (co[low, 0] >= -6 + r).all() and (co[low, 0] <= 6 - r).all()
    assert (co[high, 0] >= 10 + r).all() and (co[high, 0] <= 20 - r).all()
    assert figures(bpy)["polys"] >= 2


def test_second_bake_replaces_not_accumulates(bpy, ext):
    bpy.ops.voxnav.add_demo_scene()
    bpy.ops.voxnav.build_navmesh()

    def census():
        return (
            sorted(o.name for o in bpy.data.objects),
            len(bpy.data.meshes),
            len(bpy.data.materials),
            len(bpy.data.node_groups),
            len(bpy.data.collections),
        )

    bpy.ops.voxnav.voxelize()
    bpy.ops.voxnav.build_navmesh()
    first = census()
    for _ in range(2):
        bpy.ops.voxnav.build_navmesh()
        bpy.ops.voxnav.voxelize()
        bpy.ops.voxnav.build_navmesh()
    assert census() == first
    bpy.ops.voxnav.add_demo_scene()  # the demo replaces itself too
    assert census() == first
    bpy.ops.voxnav.clear()
    assert not ext.writeback.output_objects(bpy.context.scene)
    assert ext.writeback.VOXELS_NAME not in bpy.data.meshes
    assert ext.writeback.NAVMESH_NAME not in bpy.data.meshes


def _datablocks(bpy) -> dict:
    kinds = ("objects", "meshes", "curves", "materials", "node_groups", "collections", "cameras")
    return {kind: sorted(d.name for d in getattr(bpy.data, kind)) for kind in kinds}


def test_clear_removes_what_voxnav_made_and_nothing_else(bpy, ext):
    # A user's own datablocks named like VoxNav's, unused (the easiest to mistake for orphans).
    user_mat = bpy.data.materials.new("VoxNav Walkable")
    user_mat.diffuse_color = (1.0, 0.0, 1.0, 1.0)
    bpy.data.materials.new("VoxNav Region 00a.001")
    user_group = bpy.data.node_groups.new(ext.writeback.NODE_GROUP_NAME, "GeometryNodeTree")
    user_coll = bpy.data.collections.new("VoxNav.001")
    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0), collection=user_coll)
    bpy.context.scene.collection.children.link(user_coll)
    before = _datablocks(bpy)

    bpy.ops.voxnav.voxelize()
    bpy.ops.voxnav.build_navmesh()
    region_materials = [m for m in bpy.data.materials if m.get(ext.gather.OUTPUT_TAG)]
    assert bpy.ops.voxnav.add_path_test() == {"FINISHED"}  # empties, path tubes, their materials
    made = [m for m in bpy.data.materials if m.get(ext.gather.OUTPUT_TAG)]
    assert len(made) > len(region_materials)
    wb = ext.writeback
    # Walkable and blocked voxels, the voxelize overlay, a few shades of each region hue.
    assert len(region_materials) == 3 + len(wb.REGION_COLORS) * len(wb.REGION_SHADES)
    assert user_mat not in made and tuple(user_mat.diffuse_color) == (1.0, 0.0, 1.0, 1.0)
    vox = bpy.data.objects[ext.writeback.VOXELS_NAME]
    assert vox.modifiers["VoxNav Boxes"].node_group != user_group
    assert len(user_group.nodes) == 0  # not taken over and refilled

    bpy.ops.voxnav.clear()
    assert _datablocks(bpy) == before
    # Clearing a scene whose materials a user object still uses keeps those materials.
    bpy.ops.voxnav.build_navmesh()
    bpy.data.objects["Floor"].data.materials.append(
        made_now := bpy.data.materials["VoxNav Blocked"]
    )
    bpy.ops.voxnav.clear()
    assert made_now.name in bpy.data.materials and made_now.users == 1


def test_empty_scene_reports_error_and_creates_nothing(bpy, ext):
    objects, meshes, colls = len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.collections)
    with pytest.raises(RuntimeError, match="nothing to bake"):
        bpy.ops.voxnav.build_navmesh()
    with pytest.raises(RuntimeError, match="nothing to bake"):
        bpy.ops.voxnav.voxelize()
    assert (len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.collections)) == (
        objects,
        meshes,
        colls,
    )
    assert ext.writeback.COLLECTION_NAME not in bpy.data.collections
    assert not bpy.ops.voxnav.clear.poll()


def test_bad_settings_are_reported(bpy, ext):
    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    bpy.context.scene.voxnav.agent_height = 0.1  # under 3 cell heights
    with pytest.raises(RuntimeError, match="agent_height"):
        bpy.ops.voxnav.build_navmesh()
    assert not ext.writeback.output_objects(bpy.context.scene)


def test_settings_round_trip_to_core_units(bpy, ext):
    settings = bpy.context.scene.voxnav
    config = ext.properties.to_config(settings)
    assert config == ext.config.NavConfig()  # RecastDemo's defaults, exactly
    changed = config.replace(cell_size=0.15, agent_max_slope=37.5, partition="monotone")
    ext.properties.set_from_config(settings, changed)
    assert ext.properties.to_config(settings) == changed
    for name in ext.config.NavConfig.field_names():
        assert hasattr(settings, name), name


def test_export_navmesh_operator(bpy, ext, tmp_path):
    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    assert not bpy.ops.voxnav.export_navmesh.poll()  # nothing built yet
    bpy.ops.voxnav.voxelize()
    assert not bpy.ops.voxnav.export_navmesh.poll()  # voxels only
    bpy.ops.voxnav.build_navmesh()
    for ext_name in ("obj", "json", "bin"):
        path = tmp_path / f"nav.{ext_name}"
        bpy.ops.voxnav.export_navmesh(filepath=str(path), file_format=ext_name.upper())
        assert path.stat().st_size > 0
    # Detour's .bin is Y-up in the engine frame (x, z, -y): the floor at height ~0.
    from core.nav.binio import read_navmesh_set

    tile = read_navmesh_set(tmp_path / "nav.bin").tiles[0]
    assert tile.npolys > 0 and (abs(tile.verts[:, 1]) < 0.5).all()
    assert (abs(tile.verts[:, [0, 2]]) <= 5.01).all()
    # The .obj re-imports cleanly with Blender's own importer, back onto the floor.
    before = set(bpy.data.objects)
    bpy.ops.wm.obj_import(filepath=str(tmp_path / "nav.obj"))
    imported = [o for o in bpy.data.objects if o not in before]
    navmesh = [o for o in imported if o.name.startswith("navmesh")]
    assert navmesh and len(navmesh[0].data.polygons) > 0
    corners = [navmesh[0].matrix_world @ v.co for v in navmesh[0].data.vertices]
    assert all(-5.01 <= c.x <= 5.01 and -5.01 <= c.y <= 5.01 for c in corners)
    assert all(abs(c.z) < 0.5 for c in corners)
    bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "bare"), file_format="JSON")
    assert (tmp_path / "bare.json").read_text().lstrip().startswith("{")
    with pytest.raises(RuntimeError, match="does not exist"):
        bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "no" / "nav.obj"))
    (tmp_path / "folder.obj").mkdir()
    with pytest.raises(RuntimeError, match="it is a folder"):
        bpy.ops.voxnav.export_navmesh(filepath=str(tmp_path / "folder.obj"))
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


class _Layout:
    """Records what a panel draws; checks every property and operator it names exists."""

    def __init__(self, bpy, seen):
        self.bpy, self.seen = bpy, seen

    def __getattr__(self, name):
        def method(*args, **kwargs):
            if name == "prop":
                data, prop = args[0], args[1]
                assert hasattr(data, prop), prop
                self.seen.add(prop)
            elif name == "operator":
                category, op = args[0].split(".")
                assert hasattr(getattr(self.bpy.ops, category), op), args[0]
                self.seen.add(args[0])
            return _Layout(self.bpy, self.seen)

        return method

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)


def test_panels_draw_every_setting(bpy, ext):
    import types

    panels = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.panels")
    bpy.ops.voxnav.voxelize.poll()  # operators registered
    floor = box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    bpy.ops.voxnav.build_navmesh()
    settings = bpy.context.scene.voxnav
    settings.use_bounds = True
    settings.source = "COLLECTION"
    seen: set = set()
    context = types.SimpleNamespace(scene=bpy.context.scene, active_object=floor)
    for cls in panels.classes:
        cls.draw(types.SimpleNamespace(layout=_Layout(bpy, seen)), context)
    expected = set(ext.config.NavConfig.field_names()) | {
        "source",
        "source_collection",
        "use_bounds",
        "show_voxels",
        "show_navmesh",
        "show_links",
        "voxel_display",
        "max_voxels_drawn",
        "voxnav.voxelize",
        "voxnav.build_navmesh",
        "voxnav.clear",
        "voxnav.export_navmesh",
        "voxnav.add_demo_scene",
        "area_volume",
        "area_id",
    }
    assert expected <= seen, expected - seen


def test_area_volumes_paint_area_types_and_are_not_geometry(bpy, ext):
    box(bpy, "Floor", (-5, -5, -0.2), (5, 5, 0))
    bpy.ops.voxnav.build_navmesh()
    plain = ext.bake.LAST[bpy.context.scene.session_uid]
    triangles = plain.counts["triangles"]
    walkable = plain.counts["walkable_after_erode"]
    assert set(plain.result.polymesh.areas.tolist()) == {63}

    painted = box(bpy, "Mud", (0, -5, -1), (5, 5, 1))
    painted.voxnav.area_volume = True
    painted.voxnav.area_id = 5
    hole = box(bpy, "Pit", (-5, -5, -1), (-3, 5, 1))
    hole.voxnav.area_volume = True
    hole.voxnav.area_id = 0
    bpy.ops.voxnav.build_navmesh()
    outcome = ext.bake.LAST[bpy.context.scene.session_uid]
    assert outcome.counts["triangles"] == triangles  # the volumes are not baked as geometry
    assert outcome.counts["walkable_after_erode"] < walkable
    assert set(outcome.result.polymesh.areas.tolist()) == {5, 63}
