"""Shared test plumbing: where ../shared is, and the Recast reference data.

Parity tests need ``../shared`` (or ``$VOXNAV_SHARED``). On a developer's fresh clone without it
they skip with the reason; under CI (``CI`` set) a missing reference is a failure, never a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    return Path(os.environ.get("VOXNAV_SHARED", REPO.parent / "shared"))


def require_shared(relative: str) -> Path:
    """Path of a file under shared/; skip (fail under CI) when it is missing."""
    path = shared_dir() / relative
    if not path.exists():
        message = f"{path} is missing: set VOXNAV_SHARED to the shared/ folder"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


#: Start of the skip reason of `require_shared`, used to count the parity tests it skipped.
_SHARED_SKIP = "is missing: set VOXNAV_SHARED"


def _skipped_parity_line(reporter) -> str:
    skipped = reporter.stats.get("skipped", [])
    missing = [r for r in skipped if _SHARED_SKIP in str(getattr(r, "longrepr", ""))]
    if not missing:
        return ""
    total = sum(len(reporter.stats.get(k, [])) for k in ("passed", "failed", "skipped"))
    return (
        f"{len(missing)} of {total} tests SKIPPED: the Recast parity data is missing "
        f"({shared_dir()} not found; set VOXNAV_SHARED to the shared/ folder). "
        "This run does NOT check parity with Recast."
    )


def pytest_unconfigure(config):
    """End a run that skipped parity tests (no ../shared) with one loud line saying so: after
    pytest's own summary line, so it is the last thing printed."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    line = _skipped_parity_line(reporter)
    if line:
        reporter.write_sep("!", line, red=True, bold=True)
