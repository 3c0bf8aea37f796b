"""The pair rules over a night's pairs: in worker processes when there are enough pairs to pay for them.

The rules (engram.consolidate.pair_rules, valence_conflict) are pure Python over two texts, and a night
at 1M facts reads ~10^5 pairs with each of them (bench/perf/CONSOLIDATE.md): single-threaded they were most
of the night. A worker is a fresh interpreter running this module (`python -m`), fed a pickled batch
on stdin: not a fork (the nightly flow runs in a process with DuckDB's and Prefect's threads, whose
locks a fork would copy) and not multiprocessing's spawn, which re-runs the caller's main script in
each worker (a script without a main guard would run again, writes included). The cyclic garbage
collector is paused while a batch runs: the rules make no reference cycles, and the collector's passes
over a process holding a night's frames took ~20% of the rules' time.
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Fewer pairs than this run in the calling process: starting a worker (~0.2 s: interpreter, imports, the
# batch pickled both ways) costs about what 2,000 pairs take, and a worker should save more than it costs.
PARALLEL_MIN_PAIRS = 20_000


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (restored as it was on exit)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _run(rule: Callable[..., Any], args: Sequence[tuple[Any, ...]], batched: bool = False) -> list[Any]:
    with gc_paused():
        if not batched:
            return [rule(*a) for a in args]
        out = list(rule(args))
    if len(out) != len(args):
        raise RuntimeError(f"rule returned {len(out)} answers for {len(args)} pairs")
    return out


def workers_for(setting: int) -> int:
    """Worker processes for a setting: 0 = one per CPU this process may run on."""
    if setting > 0:
        return setting
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _rule_name(rule: Callable[..., Any]) -> tuple[str, str]:
    module, name = rule.__module__, rule.__qualname__
    if "." in name or "<" in name or getattr(importlib.import_module(module), name, None) is not rule:
        raise TypeError(f"rule {name!r} is not a module-level function: workers import it by name")
    return module, name


def _in_worker(rule: Callable[..., Any], batch: Sequence[tuple[Any, ...]], batched: bool) -> list[Any]:
    """One batch in a fresh interpreter; the engram package is put on its path as this process found it."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    payload = pickle.dumps((_rule_name(rule), batched, list(batch)), protocol=pickle.HIGHEST_PROTOCOL)
    done = subprocess.run([sys.executable, "-m", __name__], input=payload, capture_output=True, env=env, check=False)
    if done.returncode != 0:
        # its stderr may quote the texts it was reading: debug logging only
        log.debug("pair rule worker stderr: %s", done.stderr.decode(errors="replace")[-2000:])
        raise RuntimeError(f"worker exited with status {done.returncode}")
    out = pickle.loads(done.stdout)
    if len(out) != len(batch):
        raise RuntimeError(f"worker returned {len(out)} results for {len(batch)} pairs")
    return out


def apply(rule: Callable[..., Any], args: Sequence[tuple[Any, ...]], workers: int = 0, *,
          batched: bool = False) -> list[Any]:
    """[rule(*a) for a in args], in order; spread over `workers` processes (0 = one per CPU) when there
    are at least PARALLEL_MIN_PAIRS. `rule` must be a module-level function (workers import it by name).
    With `batched`, rule takes a list of argument tuples and returns their answers in order (one call
    per batch, for rules that read many pairs at once). A worker that fails is reported and its batch
    runs here instead."""
    return start(rule, args, workers, batched=batched)()


def start(rule: Callable[..., Any], args: Sequence[tuple[Any, ...]], workers: int = 0, *,
          batched: bool = False) -> Callable[[], list[Any]]:
    """apply(), begun: the workers run while the caller goes on; the returned function waits for and
    returns the answers (call it once, also when the caller fails meanwhile). Below PARALLEL_MIN_PAIRS
    the answers are computed here, now."""
    n = min(workers_for(workers), max(2 * len(args) // PARALLEL_MIN_PAIRS, 1))  # each worker >= half the minimum
    if n < 2 or len(args) < PARALLEL_MIN_PAIRS:
        done = _run(rule, args, batched)
        return lambda: done
    _rule_name(rule)  # refused here, not in a worker thread
    size = -(-len(args) // n)
    batches = [args[i:i + size] for i in range(0, len(args), size)]
    pool = ThreadPoolExecutor(len(batches))
    futures = [pool.submit(_in_worker, rule, b, batched) for b in batches]

    def gather() -> list[Any]:
        parts = []
        try:
            for batch, future in zip(batches, futures, strict=True):
                try:
                    parts.append(future.result())
                except (OSError, RuntimeError, pickle.UnpicklingError, EOFError) as exc:
                    log.warning("a pair rule worker failed (%s); running its %d pairs in this process", exc, len(batch))
                    parts.append(_run(rule, batch, batched))
        finally:
            pool.shutdown(wait=True)
        return [x for part in parts for x in part]

    return gather


def _worker_main() -> None:
    (module, name), batched, batch = pickle.load(sys.stdin.buffer)
    rule = getattr(importlib.import_module(module), name)
    sys.stdout.buffer.write(pickle.dumps(_run(rule, batch, batched), protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    _worker_main()
