"""Progress for long CLI work: a rich progress bar in a terminal, nothing when output is piped or logged.

Commands print their one summary line either way ("embedded 120 row(s) ..."), so a script or a CI
log sees exactly one line per command, and a person at a terminal sees the work move.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
STAGE_LOGGER = "engram.consolidate.runner"  # run_stage logs one record per finished stage (extra engram_stage)


def interactive() -> bool:
    """Whether the terminal shows progress: stderr is a TTY."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _bar() -> Any:
    """A rich Progress on stderr that clears itself when done (the summary line stays)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=Console(stderr=True), transient=True)


@contextmanager
def progress(label: str, total: float | None = None) -> Iterator[Callable[[float], None]]:
    """Yield advance(n): a bar with `total` steps (a pulsing one when None) in a terminal, else a no-op."""
    if not interactive():
        yield lambda n=1: None
        return
    with _bar() as bar:
        task = bar.add_task(label, total=total)
        yield lambda n=1: bar.advance(task, n)


def counted(items: Iterable[T], advance: Callable[[float], None]) -> Iterator[T]:
    """The items, advancing the bar by one as each is taken."""
    for item in items:
        yield item
        advance(1)


class _StageHandler(logging.Handler):
    def __init__(self, advance: Callable[[float], None], describe: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self._advance, self._describe = advance, describe

    def emit(self, record: logging.LogRecord) -> None:
        stage = getattr(record, "engram_stage", None)
        if stage:
            self._describe(stage)
            self._advance(1)


@contextmanager
def stage_progress(label: str, total: int | None) -> Iterator[None]:
    """A bar advanced by each nightly stage that finishes (for in-process flow runs)."""
    if not interactive():
        yield
        return
    with _bar() as bar:
        task = bar.add_task(label, total=total)
        handler = _StageHandler(lambda n: bar.advance(task, n),
                                lambda stage: bar.update(task, description=f"{label}: {stage} done"))
        logger = logging.getLogger(STAGE_LOGGER)
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)


def run_with_progress(label: str, fn: Callable[[], Any]) -> Any:
    """fn() under a pulsing bar (work whose size is not known up front: archive, reshard)."""
    with progress(label):
        return fn()
