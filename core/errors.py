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
