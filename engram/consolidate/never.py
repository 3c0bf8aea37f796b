"""'Never' contradictions: "X has never V O" against "X V'd O" said at another time.

"I've never met Michael" after "I've been working with Michael since 2023" is a contradiction no rule can
settle: one of the two is wrong, and only the person knows which. The night links them (a contradiction
review between the two facts, and a `contradicted` event on each naming the other); both are kept at
their confidence, so the agent can ask which is right.

The rule is on the statement's shape: one side says its subject never did something (a "never" and no
other negation after it), the other states it of the same subject without any negation, and the other shares the
never-side's predicate: at least NEVER_MIN_SHARED of the content words after "never" (names count), and at
least NEVER_MIN_SHARE of them. Pairs are found among a night's new facts and the tenant's active facts by
vector (cosine above NEVER_MIN_COSINE). The constants were chosen on BEAM 100K chats 6-10 and checked for
false links on LoCoMo dev (bench/quality/BEAM.md).

What was said may never have become a fact of its own ("... my API key obtained on March 10?" is asked,
not stated), so a new fact saying something never happened (in the past or perfect, no modal:
never_happened) is also compared with this run's messages of its own speaker, clause by clause
(stated_clauses: prose only, no negation): a clause stating it is recorded as a `contradicts` source of the
fact (never_episode_links). Messages are screened by shared words, not by cosine: a long message's vector
reads only its first 256 tokens.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl

from engram.consolidate import pair_rules
from engram.consolidate.context import (
    StageContext,
    fact_texts,
    new_review,
    queued_pairs,
)
from engram.store import fact_ops
from engram.text.markup import prose_blocks
from engram.text.sentences import _negations, names, split_sentences
from engram.text.tokens import STATEMENT_STOPWORDS, suffix_stem, word_tuple

NEVER = re.compile(r"\bnever\b|\bnot ever\b|\bn[o']t\s+(?:once|ever)\b", re.IGNORECASE)
NEVER_MIN_COSINE = 0.45
NEVER_MIN_SHARED = 2
NEVER_MIN_SHARE = 0.4
# words that say how or how much, not what: sharing them is no evidence the two speak of one thing
_VAGUE = {"any", "actually", "really", "ever", "once", "before", "since", "project", "projects", "thing", "things",
          "one", "time", "times", "like", "about", "related", "also", "still", "even", "yet", "kind", "kinda"}


def says_never(text: str) -> bool:
    """Whether the statement says its subject never did something: a 'never' and no other negation in what
    follows it (one before it is another clause's: "I don't see why I've never tried it")."""
    m = NEVER.search(text)
    return m is not None and _negations(text[m.end():]) == 0


def _stems(text: str) -> set[str]:
    return {suffix_stem(w) for w in word_tuple(text) if pair_rules.content_word(w) and w not in _VAGUE}


def _predicate(text: str) -> set[str]:
    """The stemmed content words (names included) after the 'never' of a statement that says never."""
    m = NEVER.search(text)
    assert m is not None
    predicate = _stems(text[m.end():]) | {suffix_stem(n) for n in names(text[m.end():])}
    return predicate - {w for w in predicate if w in STATEMENT_STOPWORDS}


def never_contradiction(a: str, b: str) -> bool:
    """Whether one of a, b says its subject never did what the other states of the same subject."""
    if says_never(b) and not says_never(a):
        a, b = b, a
    if not says_never(a) or _negations(b) != 0:
        return False
    if pair_rules.different_subjects(a, b):
        return False
    predicate = _predicate(a)
    if not predicate:
        return False
    other = _stems(b) | {suffix_stem(n) for n in names(b)}
    shared = predicate & other
    return len(shared) >= NEVER_MIN_SHARED and len(shared) / len(predicate) >= NEVER_MIN_SHARE


def never_links(ctx: StageContext, facts: pl.DataFrame, space: Any, created: set[str], taken: set[frozenset[str]]
                ) -> tuple[list[fact_ops.FactChange], list[dict[str, Any]]]:
    """The night's never-contradictions: a `contradicted` event on each side (confidence kept) and a
    contradiction review per pair, for pairs of a new fact and an active fact neither queued before nor
    among the night's other conflicts (`taken`)."""
    if not created or facts.height < 2:
        return [], []
    with ctx.open() as con:
        seen = queued_pairs(con, ctx.user_id, "contradiction") | taken
    rows = np.flatnonzero(facts["id"].is_in(list(created)).to_numpy())
    qi, cj, _ = space.pairs(space.vectors(rows), NEVER_MIN_COSINE)
    a_ids = facts["id"].gather(rows[qi]).to_list()
    b_ids = facts["id"].gather(cj).to_list()
    with ctx.open() as con:
        texts = fact_texts(con, ctx.user_id, a_ids + b_ids)
    linked: dict[str, str] = {}  # one event per fact: the first statement it is linked with
    reviews: list[dict[str, Any]] = []
    for a, b in zip(a_ids, b_ids, strict=True):
        pair = frozenset((a, b))
        if a == b or pair in seen:
            continue
        ta, tb = texts[a], texts[b]
        if (NEVER.search(ta) is None and NEVER.search(tb) is None) or not never_contradiction(ta, tb):
            continue
        seen.add(pair)
        reviews.append(new_review(ctx, "contradiction", sorted(pair), "never: one says it never happened, the other that it did"))
        linked.setdefault(a, b)
        linked.setdefault(b, a)
    changes = [fact_ops.FactChange(x, "contradicted", "never: a statement of the opposite is linked for review",
                                   related_fact_id=y) for x, y in sorted(linked.items())]
    return changes, reviews


# Where a sentence turns to another statement: "I've never tried X, but I recently finished three X" states
# the two in one message; each clause is compared on its own.
_CONTRAST = re.compile(r"\s*(?:[;:]|,?\s+but\s+|,?\s+yet\s+|,?\s+although\s+|,?\s+though\s+)\s*", re.IGNORECASE)


@lru_cache(maxsize=4096)
def stated_clauses(message: str) -> tuple[str, ...]:
    """The clauses of a message's prose that state something without any negation (markup and code left
    out): what a person said happened, for a 'never' to be compared with."""
    out: list[str] = []
    for block in prose_blocks(message):
        for sentence in split_sentences(block):
            out += [c for c in _CONTRAST.split(sentence) if c and _negations(c) == 0 and NEVER.search(c) is None]
    return tuple(out)


def denied_by_message(never_text: str, message: str) -> bool:
    """Whether a clause of `message` states what `never_text` says never happened (never_contradiction), of
    the same subject: a clause naming someone else ("Caroline obtained one") is about them."""
    who = pair_rules.subject(never_text)
    return any(never_contradiction(never_text, clause) for clause in stated_clauses(message)
               if pair_rules.subject(clause) in (None, who))


_MODAL_BEFORE = re.compile(r"\b(?:will|would|can|could|shall|should|may|might|must|wants?|wanted)\s+(?:\w+\s+)?$"
                           r"|'(?:ll|d)\s+$", re.IGNORECASE)


def never_happened(text: str) -> bool:
    """Whether a statement says something never happened: a 'never' (says_never) before a verb in the past or
    perfect ("never met", "has never tried", "never been"), no modal before it. "Will never forget", "would
    never give up", "never give up" speak of the future or of a rule, which no message of the past denies."""
    m = NEVER.search(text)
    if m is None or not says_never(text) or _MODAL_BEFORE.search(text[:m.start()]):
        return False
    after = [w for w in word_tuple(text[m.end():])[:3] if not w.endswith("ly")]  # "never actually obtained"
    return bool(after) and _past_form(after[0])


@lru_cache(maxsize=4096)
def _past_form(word: str) -> bool:
    from lemminflect import getAllInflections, getAllLemmas  # loaded once extraction has loaded it

    for base in getAllLemmas(word).get("VERB", ()):
        forms = getAllInflections(base, upos="VERB")
        if word in forms.get("VBD", ()) or word in forms.get("VBN", ()):
            return True
    return False


def never_episode_links(facts: list[tuple[str, str, np.ndarray]], episodes: list[tuple[str, str, np.ndarray]],
                        speakers: dict[str, set[str]] | None = None, roles: dict[str, str] | None = None
                        ) -> list[tuple[str, str, float]]:
    """(fact id, episode id, cosine) for each fact saying something never happened (never_happened) and a
    message of the same speaker (`roles` of the episodes among `speakers` of the fact's own episodes, when
    given) stating it: the message speaks against the fact. The fact's own message counts too ("I've never
    tried X, but I finished three X last week")."""
    out: list[tuple[str, str, float]] = []
    never = [(fid, text, vec) for fid, text, vec in facts if never_happened(text)]
    if not never or not episodes:
        return out
    # a long message's vector reads its first 256 tokens only (often code): the message is screened by the
    # words it shares with what the fact says never happened, not by cosine
    stems = [_stems(message) | {suffix_stem(n) for n in names(message)} for _, message, _ in episodes]
    for fid, text, vec in never:
        predicate = _predicate(text)
        for j, words_of in enumerate(stems):
            if len(predicate & words_of) < NEVER_MIN_SHARED:
                continue
            eid, message, evec = episodes[j]
            if speakers is not None and roles is not None and roles.get(eid, "") not in speakers.get(fid, set()):
                continue  # another person's message speaks of them, not of this fact's speaker
            if denied_by_message(text, message):
                out.append((fid, eid, float(evec @ vec)))
    return out
