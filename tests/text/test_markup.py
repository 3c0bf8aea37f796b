"""Markup and code are never statements: prose blocks of a markdown message, and the statements made of them."""

from __future__ import annotations

from datetime import datetime

from engram.text.atomic import atomic_statements, declarative_head
from engram.text.markup import is_code_line, prose_blocks

T0 = datetime(2024, 3, 15, 9, 0)

REPLY = """Certainly! Here's a plan:

### Step 1: Define the scope
First, clearly define what your project entails.

- **Feedback Reviews**: Schedule regular meetings with the team.
- Research and planning
- Design phase (wireframes, mockups)
1. The server restarts every night at 3 am.

| task | owner |
|---|---|
| login | Ana |

```python
def add(a, b):
    return a + b
```

---
Let me know if you need anything else!"""


def test_prose_blocks_drop_headings_labels_tables_and_code() -> None:
    assert prose_blocks(REPLY) == [
        "First, clearly define what your project entails.",
        "Schedule regular meetings with the team.",
        "The server restarts every night at 3 am.",
        "Let me know if you need anything else!",
    ]


def test_a_plain_message_is_one_block_and_a_lead_in_is_none() -> None:
    assert prose_blocks("I moved to Porto in **May**.") == ["I moved to Porto in May."]
    assert prose_blocks("Here is my code:") == []
    assert prose_blocks("x = load_config('prod.yaml')") == []


def test_unterminated_fence_hides_the_rest() -> None:
    assert prose_blocks("I use Flask.\n```\nimport flask\napp = flask.Flask(__name__)") == ["I use Flask."]


def test_code_lines_by_shape() -> None:
    assert is_code_line("def handler(event, context):")
    assert is_code_line("    return {'status': 200};")
    assert is_code_line("app.run(debug=True)")
    assert not is_code_line("I deployed the app on Heroku last week.")
    assert not is_code_line("My budget is $85,000 a year, 20% more than last year.")


def test_statements_of_a_user_turn_with_code_come_from_its_prose_only() -> None:
    turn = ("Here is my code:\n```python\ndef total(xs):\n    return sum(xs)\n```\n"
            "### Notes\n- Fast\n- I wrote this function for the billing service.\nI use Postgres 15 in production.")
    assert [s.text for s in atomic_statements(turn, "user", T0)] == [
        "The user wrote this function for the billing service.",
        "The user uses Postgres 15 in production.",
    ]


def test_declarative_head_keeps_the_statement_before_a_question() -> None:
    assert declarative_head("I'm on Flask 2.3 with 3 workers, how do I scale it?") == "I'm on Flask 2.3 with 3 workers"
    assert declarative_head("I met Ana at the 2022 conference - what should I ask her next?") == \
        "I met Ana at the 2022 conference"
    assert declarative_head("Can you help me, please?") == "Can you help me, please?"
    assert declarative_head("The deadline, what is it?") == "The deadline, what is it?"  # no first-person head
    assert [s.text for s in atomic_statements(
        "I've never written any Flask routes in this project, so what should I learn first?", "user", T0)] == [
        "The user has never written any Flask routes in this project"]


def test_declarative_head_cuts_a_request_without_its_question_mark() -> None:
    assert declarative_head("I mentored 5 women in media, can you help me figure that out") == \
        "I mentored 5 women in media"
    assert declarative_head("I mentored 5 women in media, and they can you know grow") == \
        "I mentored 5 women in media, and they can you know grow"


def test_passages_cut_a_long_message_on_its_structure() -> None:
    from engram.text.markup import passages

    para = " ".join(["word"] * 60)
    text = f"{para}\n\n{para}\n\n### Setup\n{para}\n\n```python\nx = 1\n```\n{para}"
    spans = passages(text, max_words=100)
    parts = [text[s:e].strip() for s, e in spans]
    assert parts == [para, para, f"### Setup\n{para}", "```python\nx = 1\n```", para]
    assert passages("short message") == [(0, 13)]
