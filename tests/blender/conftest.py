"""Blender test fixtures: build the extension zip once, install it into the bpy wheel, reset.

The tests only ever import the *installed* extension (``bl_ext.user_default.voxnav``), never the
source tree. Without the bpy wheel they skip, except under CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import importlib
import os
import types

import pytest

from . import harness


def _unavailable(message: str):
    if os.environ.get("CI"):
        pytest.fail(f"Blender tests cannot run under CI: {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
def built_zip(tmp_path_factory):
    try:
        return harness.build_zip(tmp_path_factory.mktemp("dist"))
    except harness.HarnessError as exc:
        _unavailable(str(exc))


@pytest.fixture(scope="session")
def ext(built_zip):
    """The installed extension as a namespace of its modules (core and add-on)."""
    try:
        root = harness.install_extension(built_zip)
    except ImportError as exc:
        _unavailable(f"cannot import bpy: {exc}")
    name = root.__name__
    mods = {
        m: importlib.import_module(f"{name}.voxnav_addon.{m}")
        for m in ("gather", "bake", "writeback", "demo", "cli", "properties", "operators")
    }
    mods["pipeline"] = importlib.import_module(f"{name}.core.pipeline")
    mods["config"] = importlib.import_module(f"{name}.core.config")
    mods["errors"] = importlib.import_module(f"{name}.core.errors")
    mods["root"] = root
    return types.SimpleNamespace(**mods)


@pytest.fixture
def bpy(ext):
    """bpy with an empty scene (the extension stays enabled)."""
    import bpy as _bpy

    _bpy.ops.wm.read_homefile(use_empty=True)
    return _bpy


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI nothing Blender-related may skip: a skipped Blender test is reported as failed."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under CI (Blender tests must run): {reason}"
