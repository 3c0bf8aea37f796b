"""Where the CLI's logs go: warnings to the terminal (INFO too with -v), everything at INFO to engram's log file.

Prefect logs each flow and task run at INFO through loggers that propagate to the root logger; in a
terminal those lines buried the report. They now land in the log file unless `-v`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

FORMAT = "%(levelname)s %(name)s: %(message)s"
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_MARK = "_engram_cli_handler"


class _StoreSideFileHandler(logging.FileHandler):
    """A log file beside the store, opened at the first record once its folder exists (never creates it:
    a command refusing a missing store must leave no folder behind)."""

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None and not Path(self.baseFilename).parent.is_dir():
            return
        super().emit(record)


def log_file_for(settings: Any) -> Path:
    """ENGRAM_LOG_FILE, else engram.log beside the store."""
    return Path(settings.log_file) if settings.log_file else Path(settings.db_path).parent / "engram.log"


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


def configure(verbose: bool, log_file: Path | None) -> None:
    """Terminal handler (WARNING, INFO with -v) and log file handler (INFO) on the root logger."""
    reset()
    root = logging.getLogger()
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.INFO if verbose else logging.WARNING)
    console.setFormatter(logging.Formatter(FORMAT))
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
