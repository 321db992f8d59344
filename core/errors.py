"""The one exception the core raises for bad input or impossible settings."""

import zipfile
import zlib

#: What reading a damaged NumPy .npz archive raises (a missing member, a bad array, a
#: truncated or corrupted compressed stream, a member's unknown compression method): the
#: readers turn them into a `VoxNavError` naming the file.
ARCHIVE_READ_ERRORS: tuple[type[BaseException], ...] = (
    KeyError, TypeError, ValueError, IndexError, OSError, EOFError, zipfile.BadZipFile,
    zlib.error, NotImplementedError,
)  # fmt: skip


class VoxNavError(ValueError):
    """Bad input or settings; the message says what is wrong, where, and what to change."""


class OutputError(VoxNavError):
    """An output file was refused or could not be written (see `core.atomic`); no old file
    was replaced. The CLIs exit with 1 for it."""


class UsageError(VoxNavError):
    """A bad command-line flag or setting value: the command lines exit with code 2 for it."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a cancelled CI job) or SIGHUP (the terminal closed, an
    ssh session dropped) during a command: raised in the main thread like Ctrl-C, so the same
    cleanup runs (temp files removed, worker pools shut down). ``args[0]``: the signal's name.
    """


#: The names of the signals that asked the running command to stop (`core.cliutil` records
#: them): code that catches every exception (Blender runs VoxNav's frame-change handler
#: during a render and only prints what it raises) may swallow the stop, so `stop_if_asked`
#: raises it again before any output is replaced.
STOP_ASKED: list[str] = []


def stop_if_asked() -> None:
    """Raise the stop a signal asked for (`STOP_ASKED`), if any: `KeyboardInterrupt` for
    SIGINT, `Terminated` for the others."""
    if STOP_ASKED:
        name = STOP_ASKED[-1]
        raise KeyboardInterrupt() if name == "SIGINT" else Terminated(name)
