"""What both command lines share: exit codes, flag suggestions, setting help, error handling.

Exit codes (``python -m core`` and the Blender ``voxnav`` command alike):

    0  success
    1  the bake or an input/output failed (unreadable or invalid mesh, unwritable output, an
       empty navigation mesh, an unexpected error)
    2  usage: an unknown flag, a bad flag or setting value

Every failure prints one ``voxnav: error: ...`` line on stderr; warnings print as
``voxnav: warning: ...``. An unexpected exception adds a hint to rerun with ``--verbose``, which
prints the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import NoReturn

from .config import NavConfig, did_you_mean, format_size
from .errors import STOP_ASKED, Terminated, UsageError, VoxNavError, stop_if_asked

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

#: The exit-code table as the README and ``--help`` show it.
EXIT_CODES_TEXT = (
    "exit codes: 0 success; 1 the bake or an input/output failed (including an empty "
    "navigation mesh); 2 bad flags or settings"
)


class SuggestingParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one ``voxnav: error:`` line (after the usage), as
    every other failure's, suggesting the closest flag or command (difflib); and whose
    3-number flags take negative numbers in any float spelling."""

    #: A negative number as an argument, not a flag: "-1e-3" and "-5." too (argparse's own
    #: pattern on Python 3.11 took them for flags: "expected 3 arguments").
    NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = self.NEGATIVE_NUMBER

    #: The subcommand's parser whose arguments were not all recognized (`parse_args`), for
    #: the suggestion and the help to point to; None: this parser's own.
    _unrecognized_in: argparse.ArgumentParser | None = None

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        # As argparse's, but an unrecognized flag is looked up among the chosen subcommand's
        # own flags: `path --out x` was told "did you mean --out?" (bake's flag).
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._unrecognized_in = self._subcommands().get(getattr(parsed, "command", None))
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _subcommands(self) -> dict[str, argparse.ArgumentParser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    def error(self, message: str) -> NoReturn:
        where = self._unrecognized_in or self
        where.print_usage(sys.stderr)
        self.exit(
            EXIT_USAGE,
            f"voxnav: error: {message}{self.suggestion(message)} (see {where.prog} --help)\n",
        )

    def option_strings(self) -> list[str]:
        parser = self._unrecognized_in or self
        return [s for action in parser._actions for s in action.option_strings]

    def suggestion(self, message: str) -> str:
        unknown = re.search(r"unrecognized arguments: (\S+)", message)
        if unknown:
            flag = unknown.group(1).split("=", 1)[0]
            if self._unrecognized_in is not None:
                # The other commands' flags it names whole, or starts (argparse takes a
                # unique prefix: `path --ou x` means bake's --out).
                named: dict[str, set[str]] = {}
                for name, sub in self._subcommands().items():
                    for action in sub._actions:
                        for option in action.option_strings:
                            if option == flag or (len(flag) > 2 and option.startswith(flag)):
                                named.setdefault(option, set()).add(name)
                if len(named) == 1:
                    ((option, commands),) = named.items()
                    order = [n for n in self._subcommands() if n in commands]
                    return (
                        f"; {option} is an option of {', '.join(order)}, not of "
                        f"{self._unrecognized_in.prog.rsplit(' ', 1)[-1]}"
                    )
            return did_you_mean(flag, self.option_strings())
        choice = re.search(r"invalid choice: '([^']*)'", message)
        if choice:
            choices: Iterable[str] = ()
            for action in self._actions:
                if action.choices is not None:
                    choices = [str(c) for c in action.choices]
            return did_you_mean(choice.group(1), choices)
        return ""


def setting_help(name: str, unit_note: str = "") -> str:
    """``--help`` text of a setting: meaning, unit, default and working range."""
    doc = NavConfig.doc(name)
    default = NavConfig.default(name)
    if name == "memory_limit":
        shown = format_size(default).replace(" ", "")
    elif default is None:
        shown = "unset"
    elif isinstance(default, bool):
        shown = "on" if default else "off"
    else:
        shown = str(default)
    unit = unit_note or doc.unit_shown()
    parts = [f"unit: {unit}"] if unit else []
    parts.append(f"default: {shown}")
    if doc.limits():
        parts.append(f"limits: {doc.limits()}")
    return f"{doc.meaning} ({'; '.join(parts)})".replace("%", "%%")


def print_warnings(warnings: Iterable[str]) -> None:
    for warning in warnings:
        print(f"voxnav: warning: {warning}", file=sys.stderr)


def whole_number_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number >= ``minimum`` (counts of runs, workers, pairs),
    and <= ``maximum`` when given."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {value}")
        return value

    return parse


#: A whole number >= 1.
positive_int = whole_number_at_least(1)


def _raise_terminated(signum, frame) -> NoReturn:
    name = signal.Signals(signum).name
    STOP_ASKED.append(name)  # raised again before outputs commit, should a caller swallow it
    if name == "SIGINT":
        raise KeyboardInterrupt()
    raise Terminated(name)


#: The signals a command turns into `Terminated` (SIGINT: `KeyboardInterrupt`), those this
#: platform has; each is also recorded (`errors.STOP_ASKED`).
ENDING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)
)


@contextlib.contextmanager
def _ending_signals_as_interrupt():
    """`ENDING_SIGNALS` raise `Terminated` inside the block (main thread only; restored
    after)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    try:
        for number in ENDING_SIGNALS:
            previous[number] = signal.signal(number, _raise_terminated)
    except (ValueError, OSError):  # no signals here (an embedding interpreter)
        for number, handler in previous.items():
            signal.signal(number, handler)
        yield
        return
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class _StdoutGoneQuiet(io.TextIOBase):
    """``sys.stdout`` that goes quiet once its reader has gone (a pipe into ``head``, a
    closed log viewer): a summary line nobody reads is no reason to fail a bake, and a
    failure after the outputs were replaced would say exit 1 of files that were written."""

    def __init__(self, stream):
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self.gone = True


@contextlib.contextmanager
def _quiet_when_stdout_goes():
    """`_StdoutGoneQuiet` as ``sys.stdout`` inside the block; afterwards, when the reader
    went, the standard output points at the null device (the interpreter's last flush would
    print an "Exception ignored" traceback)."""
    real = sys.stdout
    if real is None or not hasattr(real, "fileno"):
        yield
        return
    quiet = _StdoutGoneQuiet(real)
    sys.stdout = quiet
    try:
        yield
    finally:
        sys.stdout = real
        if quiet.gone:
            try:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, real.fileno())
                os.close(null)
            except (OSError, ValueError):
                pass


def run_guarded(command: Callable[[], int], verbose: bool) -> int:
    """Run ``command`` and map failures to the exit codes above, one ``error:`` line each
    (Ctrl-C and SIGTERM: exit 1, "interrupted" / "terminated", after the cleanup; a closed
    standard output is no failure)."""
    STOP_ASKED.clear()
    try:
        with _ending_signals_as_interrupt(), _quiet_when_stdout_goes():
            code = command()
        stop_if_asked()  # a stop a callee swallowed (the outputs were committed by then)
        return code
    except Terminated as exc:
        name = exc.args[0] if exc.args else "SIGTERM"
        print(f"voxnav: error: terminated ({name})", file=sys.stderr)
        return EXIT_FAILED
    except UsageError as exc:
        print(f"voxnav: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except VoxNavError as exc:
        print(f"voxnav: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        # The outputs' own errors name their file; one without a name came from a stream
        # (``bake > /dev/full`` said only "cannot access: No space left on device").
        where = (
            f" {exc.filename}"
            if getattr(exc, "filename", None)
            else " the standard output or another stream"
        )
        print(f"voxnav: error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    except MemoryError:
        print(
            "voxnav: error: out of memory: raise cell_size / cell_height, bake a smaller region "
            "with bounds, or lower memory_limit so the bake is refused early",
            file=sys.stderr,
        )
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("voxnav: error: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - the one line for what nobody foresaw
        if verbose:
            traceback.print_exc()
        print(f"voxnav: error: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        if not verbose:
            print("voxnav: rerun with --verbose to see the traceback", file=sys.stderr)
        return EXIT_FAILED


def settings_usage_error(exc: VoxNavError) -> UsageError:
    """A settings error from NavConfig, re-raised as a usage error (exit code 2)."""
    return UsageError(str(exc))


def add_link_flag(parser) -> None:
    """--offmesh-link START:END[:OPTIONS] (repeatable): hand-made off-mesh links."""
    parser.add_argument(
        "--offmesh-link",
        action="append",
        default=[],
        metavar="X,Y,Z:X,Y,Z[:OPTS]",
        help="an off-mesh link (Detour's dtOffMeshConnection) from START to END (wu, Z-up as "
        "Blender shows the OBJ, or the file's own coordinates with --recast-frame, as --from "
        "of `path`; repeatable); OPTS: radius=R (default 0.6), oneway, "
        "area=A (default 5), flags=F (default 0x08); queries follow it and the .bin/.json/"
        ".obj outputs carry it (a negative X needs the = form: --offmesh-link=-5,0,2:...)",
    )


def offmesh_links_from_args(args):
    """The --offmesh-link specs as `core.offmesh.OffMeshLinks` (None without any)."""
    from .offmesh import links_from_specs

    try:
        return links_from_specs(getattr(args, "offmesh_link", None), args.recast_frame)
    except VoxNavError as exc:
        raise UsageError(f"--offmesh-link: {exc}") from None
