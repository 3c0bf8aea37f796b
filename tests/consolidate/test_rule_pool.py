"""The pair rules over many pairs: worker processes give the answers the calling process gives, in order."""

from __future__ import annotations

import gc
import logging
import sys

import pytest

from engram.consolidate import merge_screen, pair_rules, rule_pool
from engram.text.sentences import valence_conflict

TEXTS = [
    "Caroline adopted a dog in May", "Caroline adopted a dog in May.", "Melanie loves camping",
    "Melanie hates camping", "The standup is at 9:30 every weekday", "The standup is at 10:30 every weekday",
    "Caroline lives in Lisbon", "Caroline lives in Porto", "I stopped drinking coffee", "I drink coffee every morning",
]
PAIRS = [(a, b, 0.5 + 0.05 * ((i + j) % 10)) for i, a in enumerate(TEXTS) for j, b in enumerate(TEXTS)]


@pytest.fixture()
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rule_pool, "PARALLEL_MIN_PAIRS", 20)


def test_workers_answer_as_the_calling_process_does(small_batches: None) -> None:
    args = [(a, b, c, 0.7) for a, b, c in PAIRS]
    here = [pair_rules.same_statement(*x) for x in args]
    assert rule_pool.apply(pair_rules.same_statement, args, workers=2) == here
    assert any(here) and not all(here)
    why = rule_pool.apply(pair_rules.contradiction, [(a, b, c, 0.6) for a, b, c in PAIRS], workers=3)
    assert why == [pair_rules.contradiction(a, b, c, 0.6) for a, b, c in PAIRS]
    assert {"negation", "antonym", "different value", "cessation"} & set(why)
    assert rule_pool.apply(valence_conflict, [(a, b) for a, b, _ in PAIRS], workers=2) == [
        valence_conflict(a, b) for a, b, _ in PAIRS]


def test_a_batched_rule_answers_as_the_calling_process_does(small_batches: None) -> None:
    args = [(a, b, c, 0.7) for a, b, c in PAIRS]
    here = [pair_rules.same_statement(*x) for x in args]
    assert rule_pool.apply(merge_screen.same_statements, args, workers=2, batched=True) == here
    assert rule_pool.apply(merge_screen.same_statements, args[:5], workers=2, batched=True) == here[:5]


def test_a_batched_rule_must_answer_every_pair() -> None:
    with pytest.raises(RuntimeError, match="3 answers for 2 pairs"):
        rule_pool.apply(lambda batch: [1, 2, 3], [(1,), (2,)], batched=True)


def test_a_failed_worker_runs_its_batch_here(small_batches: None, monkeypatch: pytest.MonkeyPatch,
                                            caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")
    args = [(a, b, c, 0.7) for a, b, c in PAIRS]
    with caplog.at_level(logging.WARNING, logger="engram.consolidate.rule_pool"):
        assert rule_pool.apply(pair_rules.same_statement, args, workers=2) == [
            pair_rules.same_statement(*x) for x in args]
    assert "pair rule worker failed" in caplog.text
    assert "Caroline" not in caplog.text  # no memory text in logs


def test_few_pairs_run_here_and_any_callable_works() -> None:
    assert rule_pool.apply(lambda a, b: a + b, [(1, 2), (3, 4)], workers=4) == [3, 7]


def test_a_rule_workers_cannot_import_is_refused(small_batches: None) -> None:
    with pytest.raises(TypeError, match="module-level"):
        rule_pool.apply(lambda a, b: a + b, [(1, 2)] * 40, workers=2)


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with rule_pool.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with rule_pool.gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_workers_for_setting() -> None:
    assert rule_pool.workers_for(3) == 3
    assert rule_pool.workers_for(0) >= 1


def test_a_worker_error_keeps_memory_text_out_of_warnings(small_batches: None, monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture, tmp_path) -> None:
    # a "worker" that echoes its batch (the texts included) to stderr and fails
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\ncat >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    args = [("Caroline adopted a dog", "Caroline adopted a dog.", 0.99, 0.7)] * 30
    with caplog.at_level(logging.DEBUG, logger="engram.consolidate.rule_pool"):
        assert rule_pool.apply(pair_rules.same_statement, args, workers=2) == [True] * 30
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2 and all("exited with status 3" in w for w in warnings)
    assert not any("Caroline" in w for w in warnings)
    assert any("Caroline" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
