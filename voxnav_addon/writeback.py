"""Core arrays -> Blender objects in the "VoxNav" collection.

Two objects, reused on every bake (their meshes are refilled in place, so nothing accumulates):

- "VoxNav Voxels": a point cloud mesh (one vertex per drawn voxel or span, float32 positions,
  ``voxnav_walkable`` bool and ``voxnav_height`` float point attributes) and a Geometry Nodes
  modifier that instances one box per point, coloured by material: walkable vs blocked.
- "VoxNav Navmesh": the navigation overlay mesh (``result.overlay()``), lifted slightly above the
  walkable surface, its faces coloured by region through a small palette of materials.

Colours live in the materials' viewport display colour, so they read in Solid shading with
colour type Material (set by `use_material_colors`), and in Workbench renders.
Everything is written with ``foreach_set`` from typed arrays; no Python loop per voxel or face.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix

from .gather import OUTPUT_TAG

COLLECTION_NAME = "VoxNav"
VOXELS_NAME = "VoxNav Voxels"
NAVMESH_NAME = "VoxNav Navmesh"
LINKS_NAME = "VoxNav Links"
#: Custom property on a link arcs object: how many links it draws.
LINKS_TAG = "voxnav_links"
NODE_GROUP_NAME = "VoxNav Voxel Boxes"

#: Gap between neighbouring boxes so single voxels stay readable. [Units: fraction of a cell]
BOX_SHRINK = 0.9

WALKABLE_COLOR = (0.42, 0.62, 0.70, 1.0)
BLOCKED_COLOR = (0.32, 0.30, 0.30, 1.0)
#: Off-mesh link arcs: the object's (wire) colour.
LINK_COLOR = (1.0, 0.85, 0.10, 1.0)
#: Navmesh colour when there are no regions yet (walkable span tops).
SURFACE_COLOR = (0.10, 0.75, 0.95, 1.0)
#: Region palette: saturated, distinct from the voxel colours and from grey geometry.
REGION_COLORS = (
    (0.95, 0.45, 0.10, 1.0),
    (0.20, 0.80, 0.25, 1.0),
    (0.15, 0.55, 1.00, 1.0),
    (0.95, 0.20, 0.55, 1.0),
    (1.00, 0.82, 0.10, 1.0),
    (0.55, 0.30, 0.95, 1.0),
    (0.10, 0.85, 0.80, 1.0),
    (0.85, 0.15, 0.15, 1.0),
    (0.60, 0.90, 0.15, 1.0),
    (1.00, 0.60, 0.75, 1.0),
    (0.20, 0.35, 0.85, 1.0),
    (0.90, 0.65, 0.35, 1.0),
)
#: Brightness factors of the polygons within one region.
REGION_SHADES = (1.0, 0.82, 0.66)


@dataclass
class VoxelWrite:
    """What `write_voxels` drew."""

    drawn: int
    total: int
    capped: bool
    mode: str

    @property
    def warning(self) -> str:
        if not self.capped:
            return ""
        what = "voxels" if self.mode == "VOXELS" else "spans"
        hint = (
            "; show Spans instead of Cubes, or raise Max Drawn"
            if self.mode == "VOXELS"
            else "; raise Max Drawn"
        )
        return f"drawing {self.drawn:,} of {self.total:,} {what} {CAP_MARK}{hint}"


#: In every voxel-cap warning (`VoxelWrite.warning`): a redraw replaces the one before.
CAP_MARK = "(the top of each span first)"


# ---------------------------------------------------------------------------------------------
# Collection, objects, materials
#
# Every datablock VoxNav creates carries the OUTPUT_TAG custom property, and is found again by
# that tag, never by name alone: a user's own "VoxNav Walkable" material or "VoxNav" collection
# is neither reused, refilled nor removed (VoxNav's then gets Blender's ".001" name).


def scene_writable(cls, context) -> bool:
    """An operator's poll: whether ``context``'s scene exists and is this file's own, not
    linked from a library (read-only: writing results into one crashed Blender); else the
    poll message says so."""
    scene = context.scene
    if scene is None:
        cls.poll_message_set("No scene")
        return False
    if scene.library is not None:
        cls.poll_message_set(
            "This scene is linked from another file (read-only): make it local first"
        )
        return False
    return True


def is_own(datablock) -> bool:
    """A datablock VoxNav made in this file: tagged, and not linked from a library (a linked
    "VoxNav" collection is another file's result, read-only: Voxelize into it crashed
    Blender, Build Navmesh filled its meshes, Clear deleted its objects)."""
    return bool(datablock.get(OUTPUT_TAG)) and getattr(datablock, "library", None) is None


def owned(datablocks, name: str) -> Any:
    """VoxNav's own datablock (`is_own`) called ``name`` (or ``name.001``, ...) in
    ``datablocks`` (``bpy.data.materials``, ...), or None."""
    get = getattr(datablocks, "get", None)  # a plain list (children_recursive) has none
    found = get(name) if get is not None else next((d for d in datablocks if d.name == name), None)
    if found is not None and is_own(found):
        return found
    prefix = name + "."
    for item in datablocks:
        if is_own(item) and item.name.startswith(prefix) and item.name[len(prefix) :].isdigit():
            return item
    return None


def _in_other_scenes(scene, collection) -> bool:
    """Whether ``collection`` is also in a scene other than ``scene``."""
    return any(
        other != scene and collection in other.collection.children_recursive
        for other in bpy.data.scenes
    )


def output_collection(scene, create: bool = True):
    """``scene``'s own "VoxNav" collection (anywhere in its collection tree; created and linked
    to it when ``create``). Each scene has its own: a file's scenes bake separately. One that
    an older version shared between scenes is left to the others, and this scene gets its
    own."""
    coll = owned(scene.collection.children_recursive, COLLECTION_NAME)
    if coll is not None and _in_other_scenes(scene, coll):
        if create and scene.collection.children.get(coll.name) is not None:
            scene.collection.children.unlink(coll)
        coll = None
    if coll is None and create:
        coll = bpy.data.collections.new(COLLECTION_NAME)  # "VoxNav.001" when the name is taken
        coll[OUTPUT_TAG] = True
        scene.collection.children.link(coll)
    return coll


def scene_output(scene, name: str) -> Any:
    """VoxNav's output object ``name`` (or ``name.001``, ...) in ``scene`` only, or None: each
    scene's results are its own (one in several scenes, from an older version, is none)."""
    obj = owned(scene.objects, name)
    if obj is not None and len(obj.users_scene) > 1:
        return None
    return obj


def _output_object(scene, name: str):
    """The output object ``name`` with an (emptied) mesh of its own, in the VoxNav collection."""
    coll = output_collection(scene)
    obj = scene_output(scene, name)
    if obj is not None and obj.type != "MESH":
        bpy.data.objects.remove(obj)
        obj = None
    if obj is None:
        obj = bpy.data.objects.new(name, bpy.data.meshes.new(name))
        obj[OUTPUT_TAG] = True
    if coll.objects.get(obj.name) is None:
        coll.objects.link(obj)
    # The results are world-space: an object the user moved (selecting all and moving the
    # level, say) goes back to the origin, or the new result would sit beside its level.
    obj.matrix_world = Matrix.Identity(4)
    mesh: Any = obj.data
    if mesh.users > 1:  # never refill a mesh somebody else uses
        obj.data = mesh = bpy.data.meshes.new(name)
    mesh[OUTPUT_TAG] = True
    mesh.clear_geometry()
    for attr in [a.name for a in mesh.attributes if a.name.startswith("voxnav_")]:
        mesh.attributes.remove(mesh.attributes[attr])
    mesh.materials.clear()
    return obj


def _material(name: str, color) -> bpy.types.Material:
    mat = owned(bpy.data.materials, name)
    if mat is None:
        mat = bpy.data.materials.new(name)
        mat[OUTPUT_TAG] = True
    mat.diffuse_color = color
    mat.roughness = 0.6
    tree = getattr(mat, "node_tree", None)
    if tree is not None:
        for node in tree.nodes:
            if node.type == "BSDF_PRINCIPLED":
                node.inputs["Base Color"].default_value = color
    return mat


def use_material_colors(context=None, scene=None) -> None:
    """Solid shading colour type Material: in the scene's render settings and every 3D View
    of the current screens (so the region and walkable colours show)."""
    scene = scene or (context.scene if context else bpy.context.scene)
    scene.display.shading.color_type = "MATERIAL"
    if bpy.app.background:
        return
    wm = getattr(context, "window_manager", None) or bpy.context.window_manager
    for window in wm.windows if wm else ():
        for area in window.screen.areas:
            if area.type != "VIEW_3D":
                continue
            space: Any
            for space in area.spaces:
                if space.type == "VIEW_3D" and space.shading.type == "SOLID":
                    space.shading.color_type = "MATERIAL"


# ---------------------------------------------------------------------------------------------
# Voxels


def _voxel_node_group() -> Any:
    """Geometry Nodes: one box per point, sized by cell size and ``voxnav_height``, coloured."""
    group: Any = owned(bpy.data.node_groups, NODE_GROUP_NAME)
    if group is not None and group.get("voxnav_version") == 1:
        return group
    if group is None:
        group = bpy.data.node_groups.new(NODE_GROUP_NAME, "GeometryNodeTree")
        group[OUTPUT_TAG] = True
    group.nodes.clear()
    group.interface.clear()
    group["voxnav_version"] = 1
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    size_socket: Any = group.interface.new_socket(
        "Box Width", in_out="INPUT", socket_type="NodeSocketFloat"
    )
    size_socket.default_value = 0.3
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes: Any = group.nodes
    links: Any = group.links
    gin = nodes.new("NodeGroupInput")
    gout = nodes.new("NodeGroupOutput")
    cube = nodes.new("GeometryNodeMeshCube")
    cube.inputs["Size"].default_value = (1.0, 1.0, 1.0)
    walk_attr = nodes.new("GeometryNodeInputNamedAttribute")
    walk_attr.data_type = "BOOLEAN"
    walk_attr.inputs["Name"].default_value = "voxnav_walkable"
    height_attr = nodes.new("GeometryNodeInputNamedAttribute")
    height_attr.data_type = "FLOAT"
    height_attr.inputs["Name"].default_value = "voxnav_height"
    scale = nodes.new("ShaderNodeCombineXYZ")
    links.new(gin.outputs["Box Width"], scale.inputs["X"])
    links.new(gin.outputs["Box Width"], scale.inputs["Y"])
    links.new(height_attr.outputs["Attribute"], scale.inputs["Z"])
    invert = nodes.new("FunctionNodeBooleanMath")
    invert.operation = "NOT"
    links.new(walk_attr.outputs["Attribute"], invert.inputs[0])
    join = nodes.new("GeometryNodeJoinGeometry")
    for selection, mat_name, color in (
        (walk_attr.outputs["Attribute"], "VoxNav Walkable", WALKABLE_COLOR),
        (invert.outputs[0], "VoxNav Blocked", BLOCKED_COLOR),
    ):
        set_mat = nodes.new("GeometryNodeSetMaterial")
        set_mat.inputs["Material"].default_value = _material(mat_name, color)
        links.new(cube.outputs["Mesh"], set_mat.inputs["Geometry"])
        inst = nodes.new("GeometryNodeInstanceOnPoints")
        links.new(gin.outputs["Geometry"], inst.inputs["Points"])
        links.new(selection, inst.inputs["Selection"])
        links.new(set_mat.outputs["Geometry"], inst.inputs["Instance"])
        links.new(scale.outputs["Vector"], inst.inputs["Scale"])
        links.new(inst.outputs["Instances"], join.inputs["Geometry"])
    links.new(join.outputs["Geometry"], gout.inputs["Geometry"])
    return group


def _rna_input(mod, identifier: str) -> Any:
    """The RNA struct holding a Geometry Nodes modifier input's value, or None.

    Since Blender 5.2 the inputs are RNA properties (``mod.properties.inputs.<identifier>.value``)
    and the modifier has no ID properties; before, they were ID properties (``mod[identifier]``).
    Detected by what the modifier has, not by the version number.
    """
    inputs = getattr(getattr(mod, "properties", None), "inputs", None)
    socket = getattr(inputs, identifier, None) if inputs is not None else None
    return socket if socket is not None and hasattr(socket, "value") else None


def set_modifier_input(mod, identifier: str, value) -> None:
    """Set the Geometry Nodes modifier input ``identifier`` (e.g. "Socket_1") to ``value``."""
    socket = _rna_input(mod, identifier)
    if socket is not None:
        socket.value = value
    else:
        mod[identifier] = value


def modifier_input(mod, identifier: str) -> Any:
    """The value of the Geometry Nodes modifier input ``identifier``."""
    socket = _rna_input(mod, identifier)
    return socket.value if socket is not None else mod[identifier]


def _depth_limit(counts: np.ndarray, cap: int) -> int:
    """Largest D with sum(min(counts, D)) <= cap (voxels drawn from each span's top down)."""
    lo, hi = 0, int(counts.max(initial=0))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if int(np.minimum(counts, mid).sum()) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return lo


def voxel_points(hf, mode: str = "VOXELS", cap: int = 1_000_000):
    """Box centres float32 (k,3), heights float32 (k,), walkable bool (k,), total, capped.

    ``mode`` "VOXELS": one point per voxel (cell-height tall); "SPANS": one per span. With more
    than ``cap``, voxels are kept from the top of each span down (what one sees), spans evenly.
    """
    ix, iy = hf.span_cells()
    smin = hf.smin.astype(np.int64)
    smax = hf.smax.astype(np.int64)
    walkable = hf.area != 0
    cs, ch = np.float64(hf.cs), np.float64(hf.ch)
    bmin = np.asarray(hf.bmin, dtype=np.float64)
    if mode == "SPANS":
        total = int(smin.shape[0])
        keep: Any = slice(None)
        if total > cap:
            keep = np.unique(np.linspace(0, total - 1, cap).astype(np.int64))
        z = (smin[keep] + smax[keep]) * 0.5
        height = (smax[keep] - smin[keep]) * ch
        ix_k, iy_k, walk = ix[keep], iy[keep], walkable[keep]
    else:
        counts = smax - smin
        total = int(counts.sum())
        span_idx: np.ndarray
        if total > cap:
            depth = _depth_limit(counts, cap)
            if depth == 0:  # fewer boxes than spans: the top voxel of evenly spread spans
                span_idx = np.unique(np.linspace(0, counts.shape[0] - 1, cap).astype(np.int64))
                counts_k = np.zeros_like(counts)
                counts_k[span_idx] = 1
            else:
                counts_k = np.minimum(counts, depth)
        else:
            counts_k = counts
        span_idx = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts_k)
        first = np.cumsum(counts_k) - counts_k
        below_top = np.arange(span_idx.shape[0], dtype=np.int64) - first[span_idx]
        z = smax[span_idx] - 1 - below_top + 0.5
        height = np.full(span_idx.shape[0], ch)
        ix_k, iy_k, walk = ix[span_idx], iy[span_idx], walkable[span_idx]
        # Only the top voxel of a walkable span is walkable; the solid below it is not.
        walk = walk & (below_top == 0)
    pts = np.empty((z.shape[0], 3), dtype=np.float64)
    pts[:, 0] = bmin[0] + (ix_k + 0.5) * cs
    pts[:, 1] = bmin[1] + (iy_k + 0.5) * cs
    pts[:, 2] = bmin[2] + z * ch
    return pts.astype(np.float32), height.astype(np.float32), walk, total, pts.shape[0] < total


def write_voxels(scene, hf, mode: str = "VOXELS", cap: int = 1_000_000) -> VoxelWrite:
    """Replace the "VoxNav Voxels" object's points with the heightfield's voxels or spans."""
    pts, height, walk, total, capped = voxel_points(hf, mode, cap)
    obj = _output_object(scene, VOXELS_NAME)
    mesh = obj.data
    n = pts.shape[0]
    mesh.vertices.add(n)
    mesh.attributes["position"].data.foreach_set("vector", pts.ravel())
    walk_attr = mesh.attributes.new("voxnav_walkable", "BOOLEAN", "POINT")
    walk_attr.data.foreach_set("value", walk)
    height_attr = mesh.attributes.new("voxnav_height", "FLOAT", "POINT")
    shrink_z = BOX_SHRINK if mode == "VOXELS" else 1.0
    height_attr.data.foreach_set("value", height * np.float32(shrink_z))
    mesh.update()
    mod = obj.modifiers.get("VoxNav Boxes")
    if mod is None or mod.type != "NODES":
        for m in list(obj.modifiers):
            obj.modifiers.remove(m)
        mod = obj.modifiers.new("VoxNav Boxes", "NODES")
    mod.node_group = _voxel_node_group()
    mod.show_viewport = True
    mod.show_render = True
    width_id = mod.node_group.interface.items_tree["Box Width"].identifier
    set_modifier_input(mod, width_id, float(hf.cs) * BOX_SHRINK)
    obj.display_type = "SOLID"
    return VoxelWrite(n, total, capped, mode)


# ---------------------------------------------------------------------------------------------
# Navmesh overlay


def _region_palette() -> list:
    """Materials: 3 shades of each region hue, so neighbouring polygons of a region read apart."""
    mats = []
    for i, color in enumerate(REGION_COLORS):
        for j, shade in enumerate(REGION_SHADES):
            rgb = tuple(min(1.0, c * shade) for c in color[:3])
            mats.append(_material(f"VoxNav Region {i:02d}{'abc'[j]}", (*rgb, 1.0)))
    return mats


def write_overlay(
    scene, overlay, lift: float, by_region: bool, name: str = NAVMESH_NAME
) -> bpy.types.Object:
    """Replace the "VoxNav Navmesh" mesh (or output object ``name``'s) with ``overlay`` =
    (verts, face_sizes, face_verts, face_region[, face_poly]) lifted by ``lift`` [Units: wu];
    faces coloured by region (a hue per region, a shade per polygon) when ``by_region``."""
    verts, face_sizes, face_verts, face_region = overlay[:4]
    face_poly = overlay[4] if len(overlay) > 4 else np.arange(len(face_sizes))
    verts = np.asarray(verts, dtype=np.float32).reshape(-1, 3).copy()
    verts[:, 2] += np.float32(lift)
    face_sizes = np.asarray(face_sizes, dtype=np.int32)
    face_verts = np.asarray(face_verts, dtype=np.int32)
    face_region = np.asarray(face_region, dtype=np.int64)
    obj = _output_object(scene, name)
    mesh = obj.data
    mesh.vertices.add(verts.shape[0])
    mesh.attributes["position"].data.foreach_set("vector", verts.ravel())
    mesh.loops.add(face_verts.shape[0])
    mesh.loops.foreach_set("vertex_index", face_verts)
    mesh.polygons.add(face_sizes.shape[0])
    starts = np.zeros(face_sizes.shape[0], dtype=np.int32)
    np.cumsum(face_sizes[:-1], out=starts[1:])
    mesh.polygons.foreach_set("loop_start", starts)
    try:  # derived from loop_start in some Blender versions, settable in others
        mesh.polygons.foreach_set("loop_total", face_sizes)
    except (AttributeError, TypeError, RuntimeError):
        pass
    if by_region:
        for mat in _region_palette():
            mesh.materials.append(mat)
        hue = np.maximum(face_region, 0) % len(REGION_COLORS)
        shade = np.asarray(face_poly, dtype=np.int64) % len(REGION_SHADES)
        index = (hue * len(REGION_SHADES) + shade).astype(np.int32)
    else:
        mesh.materials.append(_material("VoxNav Walkable Surface", SURFACE_COLOR))
        index = np.zeros(face_sizes.shape[0], dtype=np.int32)
    mesh.polygons.foreach_set("material_index", index)
    region_attr = mesh.attributes.new("voxnav_region", "INT", "FACE")
    region_attr.data.foreach_set("value", face_region.astype(np.int32))
    mesh.update()
    mesh.validate()
    obj.display_type = "SOLID"
    # Polygon outlines help; the detail mesh's many triangle edges would only clutter.
    obj.show_wire = bool(face_sizes.size) and bool((face_sizes != 3).any())
    return obj


def write_links(scene, links, lift: float, name: str = LINKS_NAME):
    """Replace the "VoxNav Links" object (or output object ``name``) with every off-mesh link
    of ``links`` (`core.offmesh.OffMeshLinks`) drawn as an arc of edges (`core.jumplinks.
    link_arc_mesh`), lifted by ``lift`` [Units: wu]; its ``voxnav_two_way`` edge attribute
    tells jumps from drops. No links: the object is removed. Returns the object or None."""
    from ..core.jumplinks import link_arc_mesh

    if links is None or len(links) == 0:
        obj = scene_output(scene, name)
        if obj is not None:
            data = obj.data
            bpy.data.objects.remove(obj)
            _remove_if_unused(data)
        return None
    verts, edges, two_way = link_arc_mesh(links)
    verts[:, 2] += np.float32(lift)
    obj = _output_object(scene, name)
    mesh = obj.data
    mesh.vertices.add(verts.shape[0])
    mesh.attributes["position"].data.foreach_set("vector", verts.ravel())
    mesh.edges.add(edges.shape[0])
    mesh.edges.foreach_set("vertices", edges.ravel())
    attr = mesh.attributes.new("voxnav_two_way", "BOOLEAN", "EDGE")
    attr.data.foreach_set("value", two_way)
    mesh.update()
    mesh.validate()
    obj.color = LINK_COLOR
    obj.show_in_front = True
    obj[LINKS_TAG] = len(links)
    return obj


# ---------------------------------------------------------------------------------------------
# Visibility and clearing


def apply_visibility(scene) -> None:
    """Show or hide the output objects from ``scene.voxnav.show_voxels / show_navmesh``."""
    settings = scene.voxnav
    for name, shown in (
        (VOXELS_NAME, settings.show_voxels),
        (NAVMESH_NAME, settings.show_navmesh),
        (LINKS_NAME, settings.show_navmesh and settings.show_links),
    ):
        obj = scene_output(scene, name)
        if obj is not None:
            obj.hide_viewport = not shown
            obj.hide_render = not shown
    from . import agents

    agents.apply_visibility(scene)  # the agent types' overlays, if any


def suspend_instancing(scene) -> list:
    """Turn off the voxel object's instancing modifier (until the next `write_voxels`).

    Gathering walks every depsgraph instance in Python; a previous result's million voxel boxes
    would cost more than the bake. Returns the modifiers turned off, for `resume_instancing`.
    """
    suspended = []
    for obj in output_objects(scene):
        for mod in obj.modifiers:
            if mod.type == "NODES" and mod.show_viewport:
                mod.show_viewport = False
                suspended.append(mod)
    return suspended


def resume_instancing(modifiers: list) -> None:
    for mod in modifiers:
        try:
            mod.show_viewport = True
        except ReferenceError:  # the object was removed meanwhile
            pass


def output_objects(scene) -> list:
    coll = output_collection(scene, create=False)
    return [] if coll is None else [o for o in coll.objects if is_own(o)]


def _remove_if_unused(datablock) -> None:
    """Remove an object's former data (mesh, curve, camera) once nothing uses it."""
    if datablock is None or datablock.users != 0:
        return
    datablocks: Any
    for kind, datablocks in (
        (bpy.types.Mesh, bpy.data.meshes),
        (bpy.types.Curve, bpy.data.curves),
        (bpy.types.Camera, bpy.data.cameras),
    ):
        if isinstance(datablock, kind):
            datablocks.remove(datablock)
            return


def clear(scene) -> int:
    """Remove what VoxNav made for ``scene``: its output objects and their data, the collection
    once empty, then every VoxNav mesh, curve, node group and material nothing uses any more. A
    user's own datablocks (without VoxNav's tag) are never touched. Returns the number of objects
    removed."""
    removed = 0
    coll = output_collection(scene, create=False)
    if coll is not None:
        for obj in list(coll.objects):
            if not is_own(obj):
                continue
            data = obj.data
            bpy.data.objects.remove(obj)
            _remove_if_unused(data)
            removed += 1
        if len(coll.objects) == 0 and len(coll.children) == 0:
            bpy.data.collections.remove(coll)
    # The node group before the materials: it is what still uses the voxel materials.
    datablocks: Any
    for datablocks in (bpy.data.meshes, bpy.data.curves, bpy.data.node_groups, bpy.data.materials):
        for item in [d for d in datablocks if is_own(d) and d.users == 0]:
            datablocks.remove(item)
    return removed


def linked_libraries() -> list[tuple[Any, str]]:
    """(library, its absolute path as Blender resolves it) of every library the open .blend
    links: inputs no output may replace (Export Navmesh, the batch command)."""
    return [
        (lib, bpy.path.abspath(lib.filepath, library=lib.library)) for lib in bpy.data.libraries
    ]
