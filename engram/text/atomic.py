"""Atomic statements: every self-contained sentence of an episode worth remembering, made to stand alone.

"I adopted a dog yesterday" said by Caroline on 8 May 2023 becomes "Caroline adopted a dog yesterday
(7 May 2023)": the speaker resolved (I -> the speaker's name, with the verb agreeing: "I love" ->
"Caroline loves"), relative time resolved against when it was said (engram.text.dates), and the
moment it is about kept as data (the fact's valid_from). Questions, filler, fragments and sentences
that lean on the previous turn ("That sounds great") are not statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from engram.text.dates import with_absolute_dates
from engram.text.sentences import FIRST_PERSON, STOPWORDS, self_containedness, split_sentences, words

# Roles that name no one: a statement of "user" is about the user; other generic roles stay first person.
USER_ROLES = {"user", "human"}
GENERIC_ROLES = {"user", "assistant", "system", "tool", "human", "ai", "model", "agent"}
MIN_SELF_CONTAINED = 0.75  # no question, at least four words; a leading pronoun or filler opener is allowed
MIN_CONTENT_WORDS = 1
SECOND_PERSON = {"you", "your", "yours", "you're", "you've", "you'll", "you'd", "yourself"}
MAX_STATEMENT_CHARS = 400
MODALS = {"can", "could", "will", "would", "shall", "should", "may", "might", "must", "did", "had", "was",
          "used", "ought", "need"}
_CONTRACTIONS = {"i'm": "is", "i've": "has", "i'll": "will", "i'd": "would"}
_NEGATED = {"don't": "doesn't", "do": "does", "haven't": "hasn't", "am": "is"}
_TOKEN = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)?|[^A-Za-z]+")
_ANSWERED_QUESTION = re.compile(r"\?\s+\S")


@dataclass(frozen=True)
class Statement:
    """One atomic statement of an episode."""

    text: str  # as stored: speaker resolved, relative dates made absolute
    sentence: str  # as said
    about: datetime | None  # the moment the sentence names, if it names one


@cache
def _inflection() -> tuple[Any, Any]:
    from lemminflect import (  # ~1 s to load its tables: on first use only
        getAllLemmas,
        getInflection,
    )

    return getAllLemmas, getInflection


def _third_person(verb: str) -> str | None:
    """'love' -> 'loves', 'go' -> 'goes', 'am' -> 'is'; None when `verb` is not a present base form."""
    lower = verb.lower().replace("\u2019", "'")
    if lower in _NEGATED:
        return _NEGATED[lower]
    if lower in MODALS:
        return None
    lemmas, inflect = _inflection()
    base = lemmas(lower).get("VERB")
    if not base or lower not in base:
        return None  # past tense ("went"), participle, or not a verb at all
    forms = inflect(lower, "VBZ")
    return forms[0] if forms else None


def tense(sentence: str) -> str | None:
    """'past' or 'present' by the first word that can only be read as a verb form of that tense; None
    when no word tells ("Who coaches the Lions? Dan Campbell." is present, "Ann moved to Porto" past)."""
    lemmas, _ = _inflection()
    from lemminflect import getAllInflections

    for word in words(sentence):
        base = lemmas(word).get("VERB")
        if not base:
            continue
        tags = {tag for tag, forms in getAllInflections(base[0], upos="VERB").items() if word in forms}
        if tags and tags <= {"VBD", "VBN"}:
            return "past"
        if tags & {"VBZ", "VBP"}:
            return "present"
    return None


def speaker_name(role: str | None) -> str | None:
    """The name first person stands for: a named (capitalised) speaker, "The user" for a user role, else None."""
    if not role or not role.strip():
        return None
    if role.strip().lower() in USER_ROLES:
        return "The user"
    if role.strip().lower() in GENERIC_ROLES or not role.strip()[0].isupper():
        return None  # a lower-case role ("note", "tool") names a kind of source, not a person
    return role.strip()


def _next_word(tokens: list[str], i: int) -> int | None:
    j = i + 1
    while j < len(tokens) and not tokens[j][0].isalpha():
        if tokens[j].strip():
            return None  # punctuation between: no verb follows the subject directly
        j += 1
    return j if j < len(tokens) else None


def resolve_speaker(sentence: str, name: str | None) -> str:
    """First person singular replaced by the speaker's name ("I love my dog" -> "Ann loves Ann's dog")."""
    if not name:
        return sentence
    tokens = _TOKEN.findall(sentence)  # word tokens and the runs between them, in order
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        low = tok.lower().replace("\u2019", "'")
        # "The user" opens a sentence; inside one it is "the user" (a proper name keeps its case)
        here = name if not any(t.strip() for t in out) or name != "The user" else "the user"
        if low in _CONTRACTIONS:
            out.append(f"{here} {_CONTRACTIONS[low]}")
        elif low == "i":
            out.append(here)
            # the verb after "I", or after one adverb ("I really love"), agrees with the name
            verb_at = _next_word(tokens, i)
            if verb_at is not None and _third_person(tokens[verb_at]) is None and tokens[verb_at].endswith("ly"):
                verb_at = _next_word(tokens, verb_at)
            verb = _third_person(tokens[verb_at]) if verb_at is not None else None
            if verb is not None:
                out.extend(tokens[i + 1:verb_at])
                out.append(verb)
                i = verb_at
        elif low in ("my", "mine"):
            out.append(f"{here}'s")
        elif low in ("me", "myself"):
            out.append(here)
        else:
            out.append(tok)
        i += 1
    text = "".join(out)
    return text[:1].upper() + text[1:]


def worth_remembering(sentence: str) -> bool:
    """A statement on its own: self-contained (or a question with its answer), with content words."""
    tokens = words(sentence)
    content = [w for w in tokens if w not in STOPWORDS and not w.isdigit()]
    if len(content) < MIN_CONTENT_WORDS:
        return False
    if any(w in SECOND_PERSON for w in tokens) and not any(w.split("'")[0] in FIRST_PERSON for w in tokens):
        return False  # about the listener ("Good to see you!"), whom a memory cannot name
    if _ANSWERED_QUESTION.search(sentence):
        return True  # "who coaches the Lions? Dan Campbell." states the answer
    return self_containedness(sentence) >= MIN_SELF_CONTAINED


def atomic_statements(content: str, role: str | None, said_at: datetime) -> list[Statement]:
    """The statements of one episode, in order, each standing alone."""
    name = speaker_name(role)
    out: list[Statement] = []
    seen: set[str] = set()
    for sentence in split_sentences(content):
        if not worth_remembering(sentence):
            continue
        dated, about = with_absolute_dates(sentence, said_at)
        text = resolve_speaker(dated, name)[:MAX_STATEMENT_CHARS]
        if text.lower() not in seen:
            seen.add(text.lower())
            out.append(Statement(text, sentence, about))
    return out
