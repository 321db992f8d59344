"""Imported first by ``python -m core`` (`core.__main__`): a Ctrl-C while NumPy and the core
still import ends the command as a Ctrl-C during its work does (``voxnav: error:
interrupted``, exit 1: `core.cliutil.EXIT_FAILED`), not with a KeyboardInterrupt traceback.
`core.cliutil.run_guarded` installs its own handler for the command's run. Nothing has been
written yet, so the process ends at once. Other importers of `core.__main__` (tests, tools)
keep their own SIGINT handling."""

from __future__ import annotations

import os
import signal
import sys
import threading


def _interrupted(_signum, _frame) -> None:
    sys.stderr.write("voxnav: error: interrupted\n")
    sys.stderr.flush()
    os._exit(1)


def _run_as_command() -> bool:
    """Whether ``python -m`` runs this package's ``__main__`` (as `runpy` names it)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == f"{__package__}.__main__"


if _run_as_command() and threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGINT, _interrupted)
