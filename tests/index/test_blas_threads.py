"""A search runs its matrix products on one BLAS thread and gives the process its threads back."""

from __future__ import annotations

import threading

import numpy as np  # noqa: F401 - loads the BLAS library the limit acts on
from threadpoolctl import threadpool_info

from engram.index.blas import single_threaded


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def _in_thread(fn) -> list:
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def _inside() -> list[int]:
    with single_threaded():
        return _blas_threads()


def test_blas_is_single_threaded_inside_and_restored_after() -> None:
    before = _blas_threads()
    assert before, "numpy's BLAS is loaded"
    with single_threaded():
        assert _blas_threads() == [1] * len(before)
        with single_threaded():  # nested: the inner exit leaves the outer limit in place
            pass
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before


def test_a_search_in_another_thread_gets_the_limit_after_the_main_thread_searched() -> None:
    before = _blas_threads()
    assert _inside() == [1] * len(before)  # the main thread searches first
    assert _in_thread(_inside) == [1] * len(before)  # then a worker thread (an MCP tool call)
    assert _blas_threads() == before
    assert _in_thread(_blas_threads) == before


def test_overlapping_searches_in_two_threads_leave_the_process_as_it_was() -> None:
    before = _blas_threads()
    inside, leave = threading.Event(), threading.Event()

    def other_search() -> None:
        with single_threaded():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other_search)
    t.start()
    inside.wait(5)
    with single_threaded():
        assert _blas_threads() == [1] * len(before)
    leave.set()
    t.join()
    assert _blas_threads() == before
    assert _inside() == [1] * len(before)  # and the next search still gets its limit
