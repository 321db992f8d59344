"""Everything of VoxNav that touches bpy: settings, gather, operators, writeback, panels, CLI.

Thin by design: the algorithms live in ``core`` (pure NumPy); this package moves arrays between
Blender and the core. Imported by the extension's root ``register()``.
"""

from __future__ import annotations

import bpy

from . import agents, live, obstacles, operators, panels, properties

_modules = (properties, operators, panels, agents, live, obstacles)
_cli_handle = None


def register() -> None:
    global _cli_handle
    for module in _modules:
        module.register()
    if hasattr(bpy.utils, "register_cli_command"):
        from . import cli

        _cli_handle = bpy.utils.register_cli_command("voxnav", cli.cli_command)


def unregister() -> None:
    global _cli_handle
    if _cli_handle is not None:
        bpy.utils.unregister_cli_command(_cli_handle)
        _cli_handle = None
    for module in reversed(_modules):
        module.unregister()
