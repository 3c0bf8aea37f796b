"""build_context budget rules, counted with the real WordPiece tokenizer."""

from __future__ import annotations

import pytest

from engram.errors import InvalidInput
from engram.query.passive import build_context
from engram.query.wordpiece import count_tokens, truncate_to_tokens


def words(n: int, word: str = "memory") -> str:
    return " ".join([word] * n)  # "memory" is one WordPiece token


def test_count_tokens_is_wordpiece():
    assert count_tokens("memory memory") == 2
    assert count_tokens("") == 0
    assert count_tokens("unbelievably") > 1


def test_truncate_respects_the_limit():
    text = words(50)
    assert count_tokens(truncate_to_tokens(text, 10)) == 10
    assert truncate_to_tokens(text, 0) == ""
    assert truncate_to_tokens("short", 10) == "short"


def test_everything_fits():
    out = build_context(["hi there"], ["tool ok"], ["stream"], ["sys"], budget=100)
    assert out["dropped"] == {"messages": 0, "tool_results": 0, "streamed": 0, "system": 0, "memories": 0}
    assert out["total_tokens"] == count_tokens(out["text"]) <= 100


def test_recent_messages_come_first_newest_kept():
    msgs = [words(40, "alpha"), words(40, "beta"), words(40, "gamma")]
    out = build_context(msgs, [words(30, "tool")], None, [words(30, "sys")], budget=90)
    assert out["sections"]["messages"] == [msgs[1], msgs[2]]  # oldest dropped, order kept
    assert out["dropped"]["messages"] == 1
    assert out["tokens"]["tool_results"] == 10  # tool result truncated into the rest
    assert out["sections"]["system"] == []
    assert out["total_tokens"] <= 90


def test_tool_results_privileged_over_streamed_and_system():
    out = build_context([words(10)], [words(50, "tool")], [words(30, "stream")], [words(30, "sys")], budget=70)
    assert out["tokens"]["tool_results"] == 50
    assert out["sections"]["streamed"] == [] and out["dropped"]["streamed"] == 1  # whole items only
    assert out["tokens"]["system"] == 10  # system fills the rest
    assert out["total_tokens"] == 70 == count_tokens(out["text"])


def test_newest_message_truncated_if_alone_too_big():
    out = build_context([words(500)], budget=100)
    assert out["tokens"]["messages"] == 100 and out["truncated"]["messages"] == 1


@pytest.mark.parametrize("budget", [0, -5, "10"])
def test_bad_budget(budget):
    with pytest.raises(InvalidInput, match="budget"):
        build_context(["x"], budget=budget)
