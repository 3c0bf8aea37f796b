"""The decay-rate choice of the quality report's nightly replay sweep, on hand-made curves."""

from __future__ import annotations

import pytest

from bench.quality import quality
from bench.quality.quality_retrieval import decay_choice


def _sweep(points: list[tuple[float, float | None]]) -> list[dict[str, float | None]]:
    return [{"decay_rate": rate, "recall_main_at_10": recall} for rate, recall in points]


@pytest.mark.parametrize(("points", "best", "preferred"), [
    # within 2.5 points below 0.002: the largest such rate is preferred, it still forgets
    ([(0.0, 0.350), (0.001, 0.340), (0.002, 0.330), (0.005, 0.30), (0.01, 0.20)], 0.0, 0.002),
    # 0.001 is 3.1 points below: nothing positive is close enough
    ([(0.0, 0.351), (0.001, 0.320), (0.01, 0.20)], 0.0, 0.0),
    # a peak inside the sweep; the larger rate within 2.5 points wins
    ([(0.0, 0.30), (0.002, 0.32), (0.005, 0.30), (0.01, 0.25)], 0.002, 0.005),
    # exactly 2.5 points below still counts
    ([(0.0, 0.300), (0.001, 0.275)], 0.0, 0.001),
])
def test_decay_choice(points: list[tuple[float, float]], best: float, preferred: float) -> None:
    choice = decay_choice(_sweep(points), default=0.01)
    assert (choice["best_rate"], choice["preferred_rate"]) == (best, preferred)
    assert choice["default_recall_at_10"] == dict(points).get(0.01)


def test_decay_choice_without_recall() -> None:
    choice = decay_choice(_sweep([(0.01, None)]), default=0.01)
    assert choice["best_rate"] is None and choice["preferred_rate"] is None


def test_decay_rates_outside_the_unit_interval_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        quality.main(["--decay-rates", "0.01", "-0.5"])
    assert exc.value.code == 2
    assert "--decay-rates" in capsys.readouterr().err
