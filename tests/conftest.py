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
