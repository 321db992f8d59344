"""Atomic outputs: every file is written beside its target and replaces it only when complete.

One writer, one file::

    with atomic.replacing(path) as temp:   # temp: a new file in the target's folder
        np.savez_compressed(temp, ...)      # write it by name, or use `open_replacing`
    # Here the complete file has replaced ``path`` (fsync, then os.replace). On any exception
    # the temp file is removed and whatever was at ``path`` is untouched.

A run with several outputs stages them all in one `Batch` and replaces them together, so a
failure in the last output leaves every old file as it was::

    with atomic.Batch(inputs=[mesh]) as batch:
        batch.add(out, "--out")               # checked and reserved now, before any work
        batch.add(json_path, "--json")
        ...bake...
        export.write_obj(out, pmesh, batch=batch)    # writers pass the batch to `replacing`
        export.write_json(json_path, pmesh, batch=batch)
        written = batch.commit()              # only now are the old files replaced, all of them
    # An exception anywhere in the block (or leaving it without commit) removes every temp.

Targets (`check_target`): the folder must exist and be writable; the target must be absent or a
regular file (a folder, a device node such as /dev/null, a FIFO or a socket is refused); it must
not be an input of the run nor another output of the same batch; a symbolic link is followed (the
file it points to is replaced). Every refusal and write failure raises `VoxNavError` naming the
path and saying that the previous file is unchanged (`core.errors.OutputError`, a
`VoxNavError`).

Temp files are named ``.NAME.XXXXXXXX.tmp.EXT`` (hidden, same folder, same extension, so
writers that add an extension leave the name alone; NAME cut to fit 255 bytes); the committed
file keeps the old file's permission bits, or the umask's for a new one. Replacing several
files is one ``os.replace`` each, in order: a rename in one folder does not fail for want of
space, but it is not one transaction across files.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .errors import OutputError, stop_if_asked

PathLike = str | os.PathLike


def ensure_suffix(path: PathLike, suffix: str, flag: str = "") -> Path:
    """``path`` with ``suffix`` appended unless its name already ends with it (as NumPy's
    ``savez`` and Blender's renderer name their files): ``name`` -> ``name.npz``. A path
    that ends with a folder separator names no file: `OutputError` (``out/`` became the
    hidden file ``out/.npz``)."""
    text = os.fspath(path)
    if text.endswith(tuple(sep for sep in (os.sep, os.altsep) if sep)):
        raise OutputError(
            f"cannot write {_label(path, flag)}: it names a folder (it ends with a separator); "
            f"give a file name, such as {text}navmesh{suffix}"
        )
    return Path(text if text.endswith(suffix) else text + suffix)


def _label(path: PathLike, flag: str) -> str:
    return f"{flag} {os.fspath(path)}" if flag else os.fspath(path)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def check_target(path: PathLike, inputs: Iterable[PathLike] = (), flag: str = "") -> Path:
    """Check that ``path`` may be replaced by a new file; return the real path to replace.

    ``inputs``: the run's input files (an output equal to one is refused, so a source is never
    overwritten). ``flag``: the option that named the path, for messages (``"--out"``).
    Raises `VoxNavError` when the path ends with a folder separator, the folder is missing, or
    the target is a folder, a device, a FIFO or a socket, or an input.
    """
    label = _label(path, flag)
    text = os.fsdecode(os.fspath(path))
    separators = tuple(sep for sep in (os.sep, os.altsep) if sep)
    if not text or text.endswith(separators) or os.path.basename(text) in (".", ".."):
        # ("nav.obj/." too: realpath makes it nav.obj.)
        # "nav.obj/" was written as the file nav.obj (the README: such a path names no file).
        raise OutputError(
            f"cannot write {label}: it names a folder (it ends with a separator, '.' or '..', or "
            "is empty); give a file name"
        )
    real = Path(os.path.realpath(path))
    folder = real.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {label}: output folder {folder} does not exist")
    if len(os.fsencode(real.name)) > MAX_NAME_BYTES:  # refused now, not at the final rename
        raise OutputError(
            f"cannot write {label}: its file name is longer than {MAX_NAME_BYTES} bytes; give a "
            "shorter name"
        )
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"cannot write {label}: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {label}: it is a folder; give a file name")
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputError(
            f"cannot write {label}: it is not a regular file (a device such as /dev/null, a "
            "pipe or a socket); outputs replace whole files, give a file path"
        )
    for source in inputs:
        if source and _same_file(real, Path(source)):
            raise OutputError(
                f"cannot write {label}: it is the input {os.fspath(source)}; give another "
                "output path so the input is not overwritten"
            )
    return real


#: The longest file name most file systems take (NAME_MAX), in bytes.
MAX_NAME_BYTES = 255


def _reserve_temp(real: Path, label: str) -> Path:
    """Create an empty, new temp file beside ``real`` (proves the folder is writable)."""
    # A name that is only an extension (".npz") has no suffix to pathlib, but writers that
    # add one when it is missing (np.savez, Blender's render) see it: keep it as the suffix.
    suffix = real.suffix or (real.name if real.name.count(".") == 1 and real.name[0] == "." else "")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    # The name part cut to fit NAME_MAX with the temp's additions (a legal 244-byte target
    # name made a temp name past 255 bytes: "File name too long").
    name = os.fsencode(real.name)
    room = MAX_NAME_BYTES - len(os.fsencode(f"..{'0' * 8}.tmp{suffix}"))
    shown = os.fsdecode(name[: max(1, room)])
    for _ in range(100):
        temp = real.with_name(f".{shown}.{secrets.token_hex(4)}.tmp{suffix}")
        try:
            os.close(os.open(temp, flags, 0o666))
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(
                f"cannot write {label}: cannot create a file in {real.parent} "
                f"({exc.strerror or exc})"
            ) from None
        return temp
    raise OutputError(f"cannot write {label}: no free temporary name in {real.parent}")


def _remove(path: Path) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    if os.name == "nt":  # Windows cannot open a folder for fsync; its renames are journalled
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class Staged:
    """One output of a `Batch`: ``path`` as given (absolute), ``real`` the file replaced,
    ``temp`` the file written, ``complete`` once its writer finished without error."""

    path: Path
    real: Path
    temp: Path
    label: str
    complete: bool = False


class Batch:
    """Several outputs of one run: reserve them all first, replace them all at the end.

    ``inputs``: the run's input files, which no output may be. Use as a context manager;
    leaving it without `commit` (an exception, a refusal) removes every temp file.
    """

    def __init__(self, inputs: Iterable[PathLike | None] = ()):
        self.inputs = [Path(p) for p in inputs if p]
        self.outputs: list[Staged] = []
        self.committed = False

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if not self.committed:
            self.discard()

    def find(self, path: PathLike) -> Staged | None:
        """The staged output whose target is ``path`` (after following links), if any."""
        real = Path(os.path.realpath(path))
        return next((s for s in self.outputs if s.real == real), None)

    def add(self, path: PathLike, flag: str = "") -> Path:
        """Check ``path`` (see `check_target`) and reserve its temp file now, before any work.

        Returns the absolute path as given (the name to report as written), or the real
        path where the two name different files.
        """
        label = _label(path, flag)
        real = check_target(path, self.inputs, flag)
        other = self.find(real)
        if other is not None:
            raise OutputError(f"cannot write {label}: {other.label} names the same file")
        temp = _reserve_temp(real, label)
        # The absolute path as given, unless ".." after a linked folder makes it name another
        # file than the one written (``link/../x.obj`` read as ``./x.obj`` where the file went
        # beside the link's target): then the file written.
        shown = Path(os.path.abspath(path))
        if Path(os.path.realpath(shown)) != real:
            shown = real
        staged = Staged(shown, real, temp, label)
        self.outputs.append(staged)
        return staged.path

    def add_inputs(self, inputs: Iterable[PathLike | None]) -> None:
        """More input files, learnt after the outputs were added (a .blend's linked libraries,
        known once it is open): an output already added that is one of them is refused
        (`OutputError`), and so is any output added later."""
        for source in inputs:
            if not source:
                continue
            self.inputs.append(Path(source))
            for staged in self.outputs:
                if _same_file(staged.real, Path(source)):
                    raise OutputError(
                        f"cannot write {staged.label}: it is the input {os.fspath(source)}; "
                        "give another output path so the input is not overwritten"
                    )

    def release(self, path: PathLike) -> bool:
        """Give up the output ``path`` reserved earlier (its temp file is removed, its target
        left as it was); True if it was reserved. For a run that learns late that it writes
        other files instead (one per agent)."""
        staged = self.find(path)
        if staged is None or staged.temp == staged.real:
            return False
        _remove(staged.temp)
        self.outputs.remove(staged)
        return True

    def commit(self) -> list[Path]:
        """Replace every target by its complete temp file; return the paths written.

        Raises `VoxNavError` (and replaces nothing) if an added output was never written.
        """
        try:  # a stop asked for by a signal that a callee swallowed: replace nothing
            stop_if_asked()
        except BaseException:
            self.discard()
            raise
        missing = [s.label for s in self.outputs if not s.complete]
        if missing:
            self.discard()
            raise OutputError(f"not written: {', '.join(missing)}; no file was replaced")
        for s in self.outputs:
            try:
                old_mode = stat.S_IMODE(os.stat(s.real).st_mode)
            except OSError:
                old_mode = None
            try:
                if old_mode is not None:
                    os.chmod(s.temp, old_mode)
                os.replace(s.temp, s.real)
            except OSError as exc:
                self.discard()
                raise OutputError(f"cannot write {s.label}: {exc.strerror or exc}") from None
            s.temp = s.real
        for folder in {s.real.parent for s in self.outputs}:
            _fsync_folder(folder)
        self.committed = True
        return [s.path for s in self.outputs]

    def discard(self) -> None:
        """Remove every temp file not yet committed; the targets stay as they were."""
        for s in self.outputs:
            if s.temp != s.real:
                _remove(s.temp)


@contextmanager
def replacing(
    path: PathLike,
    *,
    batch: Batch | None = None,
    inputs: Iterable[PathLike] = (),
    flag: str = "",
    fresh: bool = False,
) -> Iterator[Path]:
    """Yield a temp path beside ``path`` to write; replace ``path`` by it when complete.

    With ``batch``, the replacement waits for ``batch.commit()`` (``path`` is added to the
    batch if it is not in it yet); without, it happens when the block ends. ``inputs``,
    ``flag``: as in `check_target` (without a batch). ``fresh``: yield a path that does not
    exist yet (for writers that back up or refuse an existing file, such as Blender's save).
    An ``OSError`` in the block becomes a `VoxNavError` naming ``path``; the temp is removed.
    """
    own = batch is None
    active = Batch(inputs) if batch is None else batch
    try:
        staged = active.find(path)
        if staged is None:
            active.add(path, flag)
            staged = active.outputs[-1]
        if fresh:
            _remove(staged.temp)
        try:
            yield staged.temp
            _fsync_file(staged.temp)
        except OSError as exc:
            _remove(staged.temp)
            raise OutputError(
                f"cannot write {staged.label}: {exc.strerror or exc}; the previous file, if any, "
                "is unchanged"
            ) from None
        staged.complete = True
        if own:
            active.commit()
    finally:
        if own and not active.committed:
            active.discard()


@contextmanager
def open_replacing(
    path: PathLike,
    mode: str = "w",
    *,
    batch: Batch | None = None,
    encoding: str | None = "utf-8",
    flag: str = "",
) -> Iterator[IO[Any]]:
    """`replacing` with the temp file opened (``mode`` "w" text or "wb" binary)."""
    with replacing(path, batch=batch, flag=flag) as temp:
        with open(temp, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh
