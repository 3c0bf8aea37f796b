"""Which tool calls of one server may run at the same time, by how they open the store.

DuckDB shares one open database among the connections of a process, and refuses a read-only
connection while a read-write one is open on the same file (and the other way round: "different
configuration than existing connections"). So calls that only read run together; a call that
writes runs alone. A waiting writer stops new readers from entering, so a stream of searches
never starves add_memory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager


class StoreGate:
    """A readers-writer lock (writer preferred) for the store connections of one process."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold the gate shared: other readers may hold it too."""
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the gate alone."""
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()

    def held(self, shared: bool) -> AbstractContextManager[None]:
        """reading() when shared, else writing()."""
        return self.reading() if shared else self.writing()
