"""VoxNav Blender extension entry point: register() and unregister() only.

Nothing here imports bpy at module level, so the core's tests can import the repository root as a
package without Blender.
"""


def register():
    from . import voxnav_addon

    voxnav_addon.register()


def unregister():
    from . import voxnav_addon

    voxnav_addon.unregister()
