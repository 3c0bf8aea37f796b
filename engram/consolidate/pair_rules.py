"""Pair rules: do two facts say the same thing (merge), or contradict each other? Pure functions, no DB.

The merge stage merges a pair only when `same_statement` holds; the confidence stage halves (or
supersedes) a pair only when `contradiction` names a reason. bench/quality/quality_dedupe.py and
bench/quality/quality_contradiction.py call these same functions, so the report measures what the stages apply.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING

from engram.text.sentences import (
    _NUMBER,
    _SPEAKER,
    NEGATIONS,
    _negations,
    names,
    numbered_name,
    valence_conflict,
    valence_signature,
)
from engram.text.tokens import STATEMENT_STOPWORDS, suffix_stem, word_tuple, words

if TYPE_CHECKING:  # the rules run in workers that need not import numpy
    import numpy as np


@dataclass(frozen=True)
class PairView:
    """What the rules read from a pair of statements."""

    content_a: frozenset[str]  # stemmed content words (no function words, numbers, negations)
    content_b: frozenset[str]
    numbers_a: frozenset[str]
    numbers_b: frozenset[str]
    names_a: frozenset[str]
    names_b: frozenset[str]
    subject_a: str | None
    subject_b: str | None
    negation_diff: int

    @property
    def jaccard(self) -> float:
        return _jaccard(self.content_a, self.content_b)

    @property
    def containment(self) -> float:
        small = min(len(self.content_a), len(self.content_b))
        return len(self.content_a & self.content_b) / small if small else 1.0

    @property
    def only_a(self) -> frozenset[str]:
        return self.content_a - self.content_b

    @property
    def only_b(self) -> frozenset[str]:
        return self.content_b - self.content_a


_LEADING_NAME = re.compile(r"^\s*([A-Z][a-z]+(?:[-'][A-Za-z]+)?)\b(?!')")
_NUMBER_AFTER_NAME = re.compile(r"\s+(\d+)(?:'s)?\b(?![.,:]\d)")
# capitalised sentence openers that name no one: quantities, indefinite pronouns
_NOT_SUBJECTS = {
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "several", "many", "some",
    "few", "both", "all", "each", "every", "most", "someone", "somebody", "everyone", "everybody", "anyone",
    "people", "nobody", "none", "nothing", "something", "everything", "here", "there",
}


@lru_cache(maxsize=1 << 16)
def subject(text: str) -> str | None:
    """Who a statement is about when it names them: a speaker prefix ("Caroline: ...") or a leading name
    ("Caroline adopted a dog", as atomic extraction states facts); None when it does not say."""
    if m := _SPEAKER.match(text):
        return m.group().strip().rstrip(":").strip().lower()
    if (m := _LEADING_NAME.match(text)) and (w := m.group(1).lower().removesuffix("'s")) not in STATEMENT_STOPWORDS | _NOT_SUBJECTS | NEGATIONS:
        if (n := _NUMBER_AFTER_NAME.match(text, m.end())) and numbered_name(w, n.group(1)):
            return f"{w} {n.group(1)}"  # "User 1" and "User 2" are two people
        return w
    return None


# Words that give a short statement its direction ("jumping on"/"off" a wall, "out of"/"into" the water):
# function words elsewhere, content words when one statement is the other with them swapped.
PARTICLES = {"on", "off", "in", "out", "into", "onto", "up", "down", "over", "under", "inside", "outside",
             "above", "below", "toward", "towards", "away", "from", "to", "behind", "through", "with", "without"}


@lru_cache(maxsize=1 << 16)
def _statement(text: str) -> tuple[str, tuple[tuple[str, str], ...], frozenset[str]]:
    """A statement without its speaker prefix, its candidate content words (word, stem), its numbers."""
    t = _SPEAKER.sub("", text, count=1)
    return t, tuple((w, suffix_stem(w)) for w in word_tuple(t) if content_word(w)), frozenset(_NUMBER.findall(t))


def content_word(word: str) -> bool:
    """Whether a word token can be a content word: no function word, negation or number."""
    return word not in STATEMENT_STOPWORDS and word not in NEGATIONS and not word.endswith("n't") and not word[0].isdigit()


# A pair is read by the rules one after another (merge features, then changed_detail), not across a
# night's 10^5 pairs: a small cache serves that; 65,536 entries held ~115 MB at 1M facts for no hits.
@lru_cache(maxsize=4096)
def view(a: str, b: str) -> PairView:
    """Features of a pair (cached: the merge and contradiction rules read the same pair in a row)."""
    (ta, cand_a, num_a), (tb, cand_b, num_b) = _statement(a), _statement(b)
    na, nb = names(ta), names(tb)
    ns = na | nb
    return PairView(
        frozenset(s for w, s in cand_a if w not in ns), frozenset(s for w, s in cand_b if w not in ns),
        num_a, num_b, na, nb, subject(a), subject(b), _negations(a) - _negations(b),
    )


def _jaccard(x: set | frozenset, y: set | frozenset) -> float:
    shared = len(x & y)  # |x | y| counted, not built: the merge rule ran ~20% faster on a night's pairs
    return shared / (len(x) + len(y) - shared) if x or y else 1.0


_SPACES = re.compile(r"\s+")


def char_text(text: str) -> str:
    """A statement as its character 4-grams read it: lowercased, each run of whitespace one space."""
    return _SPACES.sub(" ", text.lower())


def _chars(text: str) -> set[tuple[str, ...]]:
    """Character 4-grams (as tuples of characters: the same sets as slices, ~25% faster to build)."""
    s = char_text(text)
    return set(zip(s, s[1:], s[2:], s[3:], strict=False))


@lru_cache(maxsize=1 << 14)
def _stems(text: str) -> tuple[str, ...]:
    """The stems of a statement's words, its speaker prefix left out (cached: a new fact is in up to
    PAIR_K pairs a night)."""
    return tuple(suffix_stem(w) for w in words(_SPEAKER.sub("", text, count=1)))


# Where a sentence splits into clauses: punctuation, conjunctions and clause openers.
_CLAUSE_BREAK = re.compile(
    r"[,;:()\"]|\b(?:and|but|which|who|while|after|before|because|since|when|although|though|according)\b", re.I)
CLAUSE_NEW_SHARE = 0.75  # a clause with this share of its content words absent from the other statement is new


@lru_cache(maxsize=1 << 16)
def _clauses(text: str) -> tuple[frozenset[str], ...]:
    """The stemmed content words of each clause of a statement (clauses of two or more content words)."""
    out = []
    for part in _CLAUSE_BREAK.split(_SPEAKER.sub("", text, count=1)):
        if part and len(c := frozenset(suffix_stem(w) for w in words(part) if w not in STATEMENT_STOPWORDS)) >= 2:
            out.append(c)
    return tuple(out)


def added_clause(a: str, b: str) -> tuple[float, float]:
    """How much one statement adds in a clause of its own that the other lacks ("... still in place" /
    "... still in place, they are attacking us"): the largest share of a clause's content words absent
    from the other statement (weighted up to four words), and log(1 + its new words) for a clause at
    least CLAUSE_NEW_SHARE new. A paraphrase rewords; a restatement with a clause added says more."""
    share, new_words = 0.0, 0
    for one, other in ((a, b), (b, a)):
        other_words = frozenset().union(*_clauses(other))
        for clause in _clauses(one):
            new = len(clause - other_words)
            share = max(share, new / len(clause) * min(len(clause), 4) / 4)
            if new / len(clause) >= CLAUSE_NEW_SHARE:
                new_words = max(new_words, new)
    return share, math.log1p(new_words)


def merge_features(a: str, b: str, cosine: float) -> list[float]:
    """The merge model's inputs, in MERGE_COEF order."""
    return [*_leading_features(a, b, cosine), *added_clause(a, b)]


def _leading_features(a: str, b: str, cosine: float) -> list[float]:
    """The merge model's inputs before the two of added_clause (the last two)."""
    ta, tb = _stems(a), _stems(b)
    v = view(a, b)
    return [
        cosine,
        v.jaccard,                                                   # content words
        _jaccard(set(ta), set(tb)),                                  # all words
        _jaccard(set(pairwise(ta)), set(pairwise(tb))),              # word bigrams (order)
        _jaccard(_chars(a), _chars(b)),                              # character 4-grams (spelling, morphology)
        float(v.numbers_a != v.numbers_b),                           # numbers disagree
        abs(len(ta) - len(tb)) / max(len(ta), len(tb), 1),           # length difference
        v.containment,                                               # the shorter one's content inside the other
        _jaccard(set(zip(ta, ta[1:], ta[2:], strict=False)),         # word trigrams (longer runs in order)
                 set(zip(tb, tb[1:], tb[2:], strict=False))),
        _jaccard(v.names_a, v.names_b) if v.names_a | v.names_b else 1.0,  # the same people and places
        float(v.names_a != v.names_b),                               # a name one of them lacks
        math.log1p(max(len(ta), len(tb))),                           # long sentences share more by chance
        math.log1p(max(len(v.only_a), len(v.only_b))),               # content words only one side has
        math.log1p(min(len(v.only_a), len(v.only_b))),
    ]


# Logistic regression on merge_features, fitted on MSRP train only (3,576 pairs, label = paraphrase,
# cosine from minilm all-MiniLM-L6-v2) by `python -m bench.fit.fit_merge_model`, which prints these
# constants and writes bench/fit/MERGE_MODEL.md: standardised features, L2 strength chosen by 5-fold
# cross-validation on train, standardisation folded into the coefficients. MERGE_MIN_PROBABILITY is
# the median, over three 5-fold splits, of the lowest probability (0.01 steps) at which the whole rule
# (same_statement at merge_threshold 0.7) reaches MSRP train precision >= 0.90 on held-out folds with a
# margin (the one-sided 90% Wilson lower bound does): the merge precision bench/quality/quality_dedupe.py asks
# for on unseen pairs, since a wrong merge hides a fact.
MERGE_COEF = (3.625, 0.878, 2.61, 0.481, 2.276, -0.432, -2.098, -0.376, -1.213, -0.467, -0.102, -0.434, -0.187, 0.436,
              -1.054, -0.382)
MERGE_INTERCEPT = -1.428
MERGE_MIN_PROBABILITY = 0.74
# A statement with at most this many content words says little else: one content word (or direction
# particle) swapped for another, or its roles swapped, makes it another statement ("running outside" /
# "running indoors", "jumping on" / "off", "the woman picks up the kangaroo" / "the kangaroo ... the
# woman"). Chosen on SICK train: the smallest size at which at most 1% of its CONTRADICTION pairs
# merge (7: 0.6%; 6: 1.05%); it costs MSRP train recall 0.02 at the same precision.
SHORT_STATEMENT = 7
SUBSTITUTION_MAX_WORDS = 2


def merge_probability(a: str, b: str, cosine: float) -> float:
    """The merge model's probability that a and b are paraphrases."""
    return _probability(sum(w * x for w, x in zip(MERGE_COEF, merge_features(a, b, cosine), strict=True)))


def _probability(weighted: float) -> float:
    """The logistic of the intercept plus the weighted sum of the features."""
    return 1.0 / (1.0 + math.exp(-(MERGE_INTERCEPT + weighted)))


# The two added_clause features are >= 0 with negative weights: they can only lower the model's score.
# A pair whose score without them already falls below the cut (by a margin far above rounding) is turned
# down without computing them: the same decisions, ~15% less time a pair (most pairs are turned down).
assert all(w < 0 for w in MERGE_COEF[-2:])
_LOGIT_CUT = math.log(MERGE_MIN_PROBABILITY / (1 - MERGE_MIN_PROBABILITY))


def _model_merges(a: str, b: str, cosine: float) -> bool:
    """merge_probability(a, b, cosine) > MERGE_MIN_PROBABILITY, skipping added_clause where it cannot matter."""
    lead = _leading_features(a, b, cosine)
    weighted = sum(w * x for w, x in zip(MERGE_COEF, lead, strict=False))
    if MERGE_INTERCEPT + weighted < _LOGIT_CUT - 1e-9:
        return False
    # added in the order merge_probability's sum adds them: the same float, not a recomputed one
    for w, x in zip(MERGE_COEF[len(lead):], added_clause(a, b), strict=True):
        weighted += w * x
    return _probability(weighted) > MERGE_MIN_PROBABILITY


def _particles(text: str) -> list[str]:
    return [w for w in words(_SPEAKER.sub("", text, count=1)) if w in PARTICLES]


def _content_order(text: str, shared: frozenset[str]) -> list[str]:
    seen: list[str] = []
    for w in words(_SPEAKER.sub("", text, count=1)):
        s = suffix_stem(w)
        if s in shared and s not in seen:
            seen.append(s)
    return seen


def _size(text: str) -> int:
    """Words that are not function words, names and numbers included."""
    return sum(1 for w in words(_SPEAKER.sub("", text, count=1)) if w not in STATEMENT_STOPWORDS)


# Colour words, spelling variants folded ("blonde" ~ "blond", "gray" ~ "grey", "dark" hair ~ "black").
# A colour only one statement has, against another only the other has, describes another thing ("a
# blond child" / "a child with dark hair"): on SICK train 86 pairs differ so, 80 NEUTRAL, 6 ENTAILMENT
# (shades: "tan" / "brown"), none CONTRADICTION. So it blocks a merge but is no contradiction.
COLOURS = {
    "black": "black", "dark": "black", "white": "white", "red": "red", "blue": "blue", "green": "green",
    "yellow": "yellow", "orange": "orange", "purple": "purple", "pink": "pink", "brown": "brown",
    "grey": "grey", "gray": "grey", "blond": "blond", "blonde": "blond", "brunette": "brunette",
    "silver": "silver", "golden": "gold", "gold": "gold", "tan": "tan",
}


@lru_cache(maxsize=1 << 16)
def _colours(text: str) -> frozenset[str]:
    return frozenset(COLOURS[w] for w in word_tuple(_SPEAKER.sub("", text, count=1)) if w in COLOURS)


def changed_detail(a: str, b: str) -> str | None:
    """Why two nearly equal statements still say different things, or None: a colour swapped (any
    length), or in short statements a word, direction or role swapped. Long statements are otherwise
    left to the merge model: paraphrases swap words too."""
    ca, cb = _colours(a), _colours(b)
    if ca - cb and cb - ca:
        return "colour swapped"
    v = view(a, b)
    if max(_size(a), _size(b)) > SHORT_STATEMENT:
        return None
    if v.only_a and v.only_b and max(len(v.only_a), len(v.only_b)) <= SUBSTITUTION_MAX_WORDS:
        return "word swapped"
    if _particles(a) != _particles(b) and not (v.only_a or v.only_b):
        return "direction swapped"
    shared = v.content_a & v.content_b
    # the statement's first content word (its subject, or its verb after a name) moved: roles swapped;
    # a reordered list ("pottery and painting" / "painting and pottery") is no swap
    if len(shared) >= 2 and not (v.only_a or v.only_b) and _content_order(a, shared)[0] != _content_order(b, shared)[0]:
        return "roles swapped"
    return None


def same_statement(a: str, b: str, cosine: float, min_cosine: float) -> bool:
    """Merge rule: similar (cosine > min_cosine), a paraphrase by the merge model, no valence conflict
    (negation, antonym, other number or name), and no swapped word, direction or role."""
    if cosine <= min_cosine:
        return False
    # the model first: it turns down most similar pairs, so the other tests run for few (same answer;
    # the 100k bench store's merge stage took ~14 s instead of ~19.5 s)
    if not _model_merges(a, b, cosine):
        return False
    return valence_conflict(a, b, swap_excuses=False) is None and changed_detail(a, b) is None


# A negation or antonym between statements that share two thirds of their content words contradicts
# even at a modest cosine ("A man is playing a guitar" / "There is no man playing a guitar"). Chosen on
# SICK train (precision 0.958, recall 0.750 with the cosine branch) and checked against the LoCoMo
# false-alarm budget, which it does not raise (12.3 alarms per 1,000 turns, as with the cosine alone).
CONTRADICTION_MIN_SHARED = 2 / 3
CONTRADICTION_MIN_COSINE = 0.6


def different_subjects(a: str, b: str) -> bool:
    """Both statements name whom they are about, and not the same one ("Caroline: ..." / "Melanie: ...")."""
    sa, sb = subject(a), subject(b)
    return sa is not None and sb is not None and sa != sb


# English markers that a habit or state has ended ("I stopped drinking coffee", "no longer", "quit").
_CESSATION = re.compile(
    r"\b(stopped|stop|quit|quitted|gave up|give up|no longer|not anymore|not any more|anymore|used to"
    r"|no more|instead of)\b", re.I)
CESSATION_MIN_SHARED = 2  # content words the ended habit shares with the earlier statement


# The same pattern without re.I, for ASCII text lowered first: the same answer at half the time (re.I
# compares every character case-folded). Non-ASCII text keeps re.I, whose folding differs from lower().
_CESSATION_LOWER = re.compile(_CESSATION.pattern)


@lru_cache(maxsize=1 << 16)
def _ends(text: str) -> bool:
    if text.isascii():
        return _CESSATION_LOWER.search(text.lower()) is not None
    return _CESSATION.search(text) is not None


def cessation(a: str, b: str) -> bool:
    """Whether one of the two says that what the other states has ended ("I drink coffee every morning"
    / "I stopped drinking coffee"): they share the habit's content words, only one has the marker, and
    the other states what ended, not what goes on ("I stopped drinking coffee; I drink green tea now" does
    not end "Green tea is all I drink": the words they share are the ones that go on)."""
    if _ends(a) == _ends(b):
        return False
    pair = view(a, b)
    shared = {suffix_stem(w) for w in pair.content_a} & {suffix_stem(w) for w in pair.content_b}
    ending = a if _ends(a) else b
    return len(shared) >= CESSATION_MIN_SHARED and bool(shared & ended_words(ending))


# Markers after which the ended thing is named ("stopped drinking coffee", "instead of coffee"); the
# others follow it ("I don't drink coffee anymore").
_ENDS_BEFORE = {"anymore", "not anymore", "not any more"}
# Where what ended stops: a clause break (punctuation, a conjunction)
_ENDED_CLAUSE = re.compile(r"[,;:.!?()\"]|\b(?:and|but|so|while|because|since|now|these days)\b", re.I)


@lru_cache(maxsize=1 << 16)
def ended_words(text: str) -> frozenset[str]:
    """The stemmed content words of what a statement says has ended and does not say goes on: the words
    its cessation marker points at, in that clause, less the words of the rest of the statement
    ("I stopped drinking coffee; I only drink green tea now" -> {coffee}). Empty without a marker."""
    t = _SPEAKER.sub("", text, count=1)
    m = _CESSATION.search(t)
    if m is None:
        return frozenset()
    marker = m.group().lower()
    if marker in _ENDS_BEFORE:
        start = max((b.end() for b in _ENDED_CLAUSE.finditer(t, 0, m.start())), default=0)
        span, rest = t[start:m.start()], t[:start] + " " + t[m.end():]
    else:
        stop = _ENDED_CLAUSE.search(t, m.end())
        end = stop.start() if stop else len(t)
        span, rest = t[m.end():end], t[:m.start()] + " " + t[end:]
    stems = {suffix_stem(w) for w in words(span) if content_word(w)}
    return frozenset(stems - {suffix_stem(w) for w in words(rest) if content_word(w)})


def contradiction(a: str, b: str, cosine: float, min_cosine: float) -> str | None:
    """Why a and b contradict (negation, antonym, different value), or None.

    A valence conflict counts when the pair is similar (cosine > min_cosine), or when it is at least
    CONTRADICTION_MIN_COSINE similar and shares two thirds of its content words. Statements about
    different subjects never contradict: Caroline loving pizza and Melanie hating it are both true.
    """
    if cosine <= min(min_cosine, CONTRADICTION_MIN_COSINE):
        return None
    if different_subjects(a, b):
        return None
    why = valence_conflict(a, b)
    if why is None and cessation(a, b):
        return "cessation"
    if why is None:
        return None
    if cosine > min_cosine or view(a, b).jaccard >= CONTRADICTION_MIN_SHARED:
        return why
    return None


# valence_code's fields, packed and read by the screens below
_NEGATIONS_SHIFT = 4
_BOTH_SIDES = 0b1110  # antonym word, number, name: a conflict of these needs them on both sides
_ENDED = 0b1


def valence_code(text: str) -> int:
    """What contradiction() and valence_conflict() need of one statement before they can name a reason,
    as one integer kept with a fact's keys (engram.consolidate.fact_keys): negation count << 4 | a word
    of an antonym pair << 3 | a number << 2 | a name << 1 | a marker that something ended."""
    negations, antonym, number, name = valence_signature(text)
    return negations << _NEGATIONS_SHIFT | antonym << 3 | number << 2 | name << 1 | _ends(text)


def codes_may_conflict(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise over two integer arrays of valence codes: False where valence_conflict cannot name a
    conflict. A negation needs other negation counts, an antonym a word of an antonym pair on each side, a
    different value numbers or names on both sides."""
    return ((a >> _NEGATIONS_SHIFT) != (b >> _NEGATIONS_SHIFT)) | ((a & b & _BOTH_SIDES) != 0)


def codes_may_contradict(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise: False where contradiction() cannot name a reason (no valence conflict is possible,
    and neither or both of the statements say that something ended)."""
    return codes_may_conflict(a, b) | (((a ^ b) & _ENDED) != 0)


def _stems_and_values(text: str) -> frozenset[str]:
    """A statement's stemmed content words (names included) and its numbers."""
    t, cand, nums = _statement(text)
    return frozenset(s for _, s in cand) | nums


def replaced_words(old: str, new: str) -> frozenset[str]:
    """What `new` says has ended of `old`: the ended thing's words that `old` states, when `new` ends it
    (a cessation). Empty otherwise: another value of a statement is updated through its frame
    (engram.consolidate.updates), which takes every older statement of the frame, restatements included."""
    if cessation(old, new) and _ends(new):
        return _stems_and_values(old) & ended_words(new)
    return frozenset()


def _names_another(a: str, b: str) -> bool:
    """Whether `a` names whom it is about and `b` does not mention them ("Caroline takes the bus" / "I take
    the bus"); a leading word `b` uses is no other subject ("Black coffee ..." / "... coffee black ...")."""
    who = subject(a)
    return who is not None and not set(who.split()) <= set(word_tuple(b.lower()))


def restates(other: str, old: str, new: str) -> bool:
    """Whether `other` states what `new` ended of `old` and agrees with `old`: the end of a habit ends its
    restatements ("I drink my coffee black every morning", superseded by "I stopped drinking
    coffee", takes "Black coffee every morning, that's my routine" with it). No valence conflict with
    `old`, no subject the other does not mention, no cessation marker of its own, and every replaced word
    of `old` in it."""
    replaced = replaced_words(old, new)
    if not replaced or _ends(other) or _names_another(other, old) or _names_another(old, other):
        return False
    return replaced <= _stems_and_values(other) and valence_conflict(other, old) is None
