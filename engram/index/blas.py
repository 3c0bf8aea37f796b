"""One BLAS thread for a search's small matrix products.

A search multiplies a few hundred candidate vectors at a time. OpenBLAS splits even those over every
core, and on a busy machine (the night on the same two cores) its threads wait for each other, so a
product that one thread finishes in well under a millisecond takes many times longer. Large products
(the night's pair search) keep every thread: the limit is scoped to a search.

OpenBLAS has one process-wide pool. threadpoolctl lets one thread at a time change it and hands
control back when the last limit of the process is left, so searches in any thread (an MCP server's
workers) get the limit; when two overlap, the first to leave restores the threads for both, which
costs the other speed, never correctness.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_CONTROLLER: Any = None


def _controller() -> Any:
    global _CONTROLLER
    if _CONTROLLER is None:
        # imported on first use; the controller reads the loaded BLAS libraries once per process
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


@contextmanager
def single_threaded() -> Iterator[None]:
    """BLAS on one thread inside the block; the process's thread count again after it."""
    with _controller().limit(limits=1, user_api="blas"):
        yield
