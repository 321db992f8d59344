"""Run in each worker process of a tiled bake's process pool (``runpy.run_path``), before any
job: make the extension's ``core`` importable under the name Blender gave it.

Inside Blender the add-on is ``bl_ext.<repo>.voxnav`` and its tile jobs pickle by that name, but a
plain Python worker has no ``bl_ext``. This registers empty parent packages and a stub of the
extension package whose path is the extension folder, so ``bl_ext.<repo>.voxnav.core.tiles``
imports from there (the extension's own ``__init__`` is not run: it is Blender-only). Globals
given by the parent: ``PACKAGE`` (the extension's package name) and ``ROOT`` (its folder).
No bpy here: the workers run NumPy only.
"""

import sys
import types

_parts = PACKAGE.split(".")  # type: ignore[name-defined]  # noqa: F821
for _i in range(1, len(_parts)):
    _name = ".".join(_parts[:_i])
    if _name not in sys.modules:
        _parent = types.ModuleType(_name)
        _parent.__path__ = []
        sys.modules[_name] = _parent
if PACKAGE not in sys.modules:  # type: ignore[name-defined]  # noqa: F821
    _stub = types.ModuleType(PACKAGE)  # type: ignore[name-defined]  # noqa: F821
    _stub.__path__ = [ROOT]  # type: ignore[name-defined]  # noqa: F821
    sys.modules[PACKAGE] = _stub  # type: ignore[name-defined]  # noqa: F821
