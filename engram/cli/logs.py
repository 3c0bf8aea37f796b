"""Where the CLI's logs go: warnings to the terminal (INFO too with -v), everything at INFO to engram's log file.

Prefect logs each flow and task run at INFO through loggers that propagate to the root logger; in a
terminal those lines buried the report. They now land in the log file unless `-v`.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

FORMAT = "%(levelname)s %(name)s: %(message)s"
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_MARK = "_engram_cli_handler"


class _StoreSideFileHandler(logging.FileHandler):
    """A log file beside the store, opened at the first record once its folder exists (never creates it:
    a command refusing a missing store must leave no folder behind). One that cannot be opened (a
    read-only directory) is one warning on stderr, then the terminal only: never a failed command."""

    broken = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None:
            if self.broken or not Path(self.baseFilename).parent.is_dir():
                return
            try:
                self.stream = self._open()
            except OSError as exc:  # a read-only store directory: the terminal still gets WARNING and above
                self.broken = True
                sys.stderr.write(f"warning: cannot write the log file {self.baseFilename} "
                                 f"({exc.strerror or exc}); logging to the terminal only\n")
                return
        super().emit(record)


class _QuietRunFailures(logging.Filter):
    """Drop Prefect's own lines on a failed task or flow run (a traceback block, 'Finished in state
    Failed') from the terminal: engram reports each failure in one line (`tenant X failed: ...`, or the
    command's `error [...]`). They stay in the log file; -v and --debug show them."""

    _PREFECT_CODE = f"{os.sep}prefect{os.sep}"

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno >= logging.ERROR and record.name.startswith(("prefect.task_runs", "prefect.flow_runs"))
                    and self._PREFECT_CODE in record.pathname)


def reset() -> None:
    """Remove the handlers configure() installed and restore the root level (at the end of a command:
    CliRunner runs many commands in one process)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _MARK, False)]:
        root.removeHandler(handler)
        handler.close()
    level = getattr(root, _MARK + "_level", None)
    if level is not None:
        root.setLevel(level)
        delattr(root, _MARK + "_level")


def configure(verbose: bool, log_file: Path | None, debug: bool = False) -> None:
    """Terminal handler (WARNING, INFO with -v) and log file handler (INFO) on the root logger."""
    reset()
    root = logging.getLogger()
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.INFO if verbose else logging.WARNING)
    console.setFormatter(logging.Formatter(FORMAT))
    if not (verbose or debug):
        console.addFilter(_QuietRunFailures())
    handlers: list[logging.Handler] = [console]
    if log_file is not None:
        to_file = _StoreSideFileHandler(log_file, encoding="utf-8", delay=True)
        to_file.setLevel(logging.INFO)
        to_file.setFormatter(logging.Formatter(FILE_FORMAT))
        handlers.append(to_file)
    for handler in handlers:
        setattr(handler, _MARK, True)
        root.addHandler(handler)
    setattr(root, _MARK + "_level", root.level)
    root.setLevel(logging.INFO)
