"""Updates of a counted value: a later "N things" of the same subject and thing supersedes the earlier.

"My Zotero library has 45 sources", weeks later "I've added 52 sources to my Zotero library"; "I
secured 3 interviews", later "I secured 5 interviews": the same subject counts the same thing (the word
after the number) with another number, in statements that share what is counted (at least
COUNT_MIN_SHARED content words, the counted thing included). The frame rule
(engram.consolidate.updates) needs the two phrased alike; this one reads the count and its thing, so
the two may be phrased apart over a long gap. The older fact is superseded from the newer one's
valid_from (as_of still answers it); facts of one moment are left alone (a contradiction, not an update).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl

from engram.consolidate import pair_rules
from engram.consolidate.context import StageContext, fact_texts
from engram.store import fact_ops
from engram.text.tokens import STATEMENT_STOPWORDS, suffix_stem, word_tuple

COUNT_MIN_COSINE = 0.5
COUNT_MIN_SHARED = 3
_COUNT = re.compile(r"(?<![\w.,:/-])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(%|[A-Za-z][A-Za-z-]+)")
_NOT_COUNTED = {"am", "pm", "th", "st", "nd", "rd", "percent", "and", "or", "to", "at", "on", "in", "of", "by",
                "for", "the", "a", "an", "with", "from"}
_MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"}


def counts(text: str) -> dict[str, str]:
    """{counted thing (stem): number} of a statement: '45 sources' -> {'source': '45'}; dates are no counts."""
    out: dict[str, str] = {}
    for m in _COUNT.finditer(text):
        before = text[: m.start()].rstrip().split()[-1:] or [""]
        noun = m.group(2).lower()
        if noun in _NOT_COUNTED or noun in _MONTHS or before[0].lower().strip(",") in _MONTHS:
            continue
        out.setdefault("%" if noun == "%" else suffix_stem(noun), m.group(1).replace(",", ""))
    return out


def _content(text: str) -> set[str]:
    return {suffix_stem(w) for w in word_tuple(text)
            if pair_rules.content_word(w) and w not in STATEMENT_STOPWORDS and w not in _MONTHS}


def count_update(older: str, newer: str) -> bool:
    """Whether `newer` counts a thing `older` counts, of the same subject, with another number."""
    a, b = counts(older), counts(newer)
    things = [t for t in a.keys() & b.keys() if t != "%" and a[t] != b[t]]
    if not things or pair_rules.different_subjects(older, newer):
        return False
    return len(_content(older) & _content(newer)) >= COUNT_MIN_SHARED


def count_supersessions(ctx: StageContext, facts: pl.DataFrame, space: Any, created: set[str],
                        decided: set[str]) -> list[fact_ops.FactChange]:
    """The older side of each pair of a new fact and an active fact that updates its count (a fact already
    changed this night, `decided`, is left alone); each older fact goes to its earliest update."""
    if not created or facts.height < 2:
        return []
    rows = np.flatnonzero(facts["id"].is_in(list(created)).to_numpy())
    qi, cj, _ = space.pairs(space.vectors(rows), COUNT_MIN_COSINE)
    a_rows, b_rows = rows[qi], cj
    ids, valid = facts["id"], facts["valid_from"]
    a_ids, b_ids = ids.gather(a_rows).to_list(), ids.gather(b_rows).to_list()
    a_from, b_from = valid.gather(a_rows).to_list(), valid.gather(b_rows).to_list()
    with ctx.open() as con:
        texts = fact_texts(con, ctx.user_id, a_ids + b_ids)
    best: dict[str, tuple[datetime, str]] = {}
    for a, b, fa, fb in zip(a_ids, b_ids, a_from, b_from, strict=True):
        if a == b or fa is None or fb is None or fa == fb:
            continue
        (old, new, until) = (a, b, fb) if fa < fb else (b, a, fa)
        if old in decided or not count_update(texts[old], texts[new]):
            continue
        if old not in best or until < best[old][0]:
            best[old] = (until, new)
    return [fact_ops.FactChange(old, "superseded", "update: a later fact counts the same thing with another number",
                                status="superseded", valid_to=until, related_fact_id=new)
            for old, (until, new) in sorted(best.items())]
