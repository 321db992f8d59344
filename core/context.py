"""The build context, as Recast's ``rcContext``: progress, per-stage timers, collected warnings.

One `BuildContext` is passed to every pipeline stage. Stages call ``ctx.warn(...)`` instead of
logging, so what they notice reaches the user: the Blender operator reports each warning and
lists it in the Last Bake panel, both command lines print it on stderr. ``ctx.stage(name)``
times a stage and reports progress before it starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field

from . import heap

#: progress(fraction in [0, 1], message).
ProgressFn = Callable[[float, str], None]


@dataclass
class BuildContext:
    """Progress, timers and warnings of one bake. Not shared between bakes or threads.

    ``stages`` (optional) lists the stage names in run order so that progress fractions can be
    derived from a stage's position; a stage not in it reports the last fraction again.
    """

    progress_fn: ProgressFn | None = None
    stages: tuple[str, ...] = ()
    #: Wall seconds per stage, in the order the stages ran. [Units: s]
    timings: dict[str, float] = field(default_factory=dict)
    #: Warnings in the order they were raised; each a full sentence a user can act on.
    warnings: list[str] = field(default_factory=list)
    #: Optional pool (processes: `concurrent.futures.ProcessPoolExecutor`, or a cluster's) for
    #: the Python-bound, independent pieces of a stage: the detail mesh sends it the polygons
    #: that add interior samples when they are many. None: everything in this process.
    executor: Executor | None = None
    #: Set by the pipeline for the stages that learn part of their size only while they run
    #: (the regions' floors: `core.memory.check_more`): ``memory_check(stage, extra, drivers)``
    #: refuses (`VoxNavError`) when the stage's recorded estimate plus ``extra`` bytes exceeds
    #: the memory limit. None: nothing is checked.
    memory_check: Callable[[str, int, str], None] | None = None
    _fraction: float = 0.0

    def __post_init__(self) -> None:
        # Every bake, tile and agent job makes one: the first sets the allocator up to keep
        # the memory stages free for the stages after them (`core.heap`).
        heap.keep_freed_memory()

    def warn(self, message: str) -> None:
        """Record a warning (duplicates of an earlier warning are dropped)."""
        if message not in self.warnings:
            self.warnings.append(message)

    def progress(self, fraction: float, message: str) -> None:
        """Report progress; fraction is clamped to [0, 1]."""
        self._fraction = min(max(float(fraction), 0.0), 1.0)
        if self.progress_fn is not None:
            self.progress_fn(self._fraction, message)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the enclosed block as stage ``name`` (added to an earlier time of that name)."""
        if name in self.stages:
            self.progress(self.stages.index(name) / len(self.stages), name)
        else:
            self.progress(self._fraction, name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add_time(name, time.perf_counter() - start)

    def add_time(self, name: str, seconds: float) -> None:
        """Add ``seconds`` to stage ``name``'s time (a stage run elsewhere, or a share of one
        run for several bakes). [Units: s]"""
        self.timings[name] = self.timings.get(name, 0.0) + seconds

    def done(self) -> None:
        self.progress(1.0, "done")
