"""Rule-based text heuristics for facts: claim type, self-containedness, valence conflicts."""

from __future__ import annotations

import calendar
import re
from typing import NamedTuple

from engram.text.tokens import (
    FILLER,
    NOT_NAMES,
    STATEMENT_STOPWORDS,
    TEXT_CACHE_SIZE,
    kept_per_text,
    word_tuple,
    words,
)

NEGATIONS = {
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "without",
    "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't", "won't", "wouldn't",
    "can't", "couldn't", "shouldn't", "hasn't", "haven't", "hadn't", "dont", "doesnt", "didnt",
    "isnt", "arent", "wasnt", "cant", "wont", "n't", "nowhere",
}
# Word pairs whose swap flips a statement. Pairs that mostly mark a different subject or scene
# rather than a contradiction (man/woman, boy/girl, sitting/standing, up/down, in/out, on/off,
# inside/outside) were dropped: on SICK train they fired 255 times with precision 0.02
# (bench/quality/QUALITY.md, contradiction section).
ANTONYMS = [
    ("love", "hate"), ("loves", "hates"), ("like", "dislike"), ("likes", "dislikes"),
    ("always", "never"), ("true", "false"), ("yes", "no"), ("open", "closed"), ("alive", "dead"),
    ("increase", "decrease"), ("increased", "decreased"), ("win", "lose"), ("won", "lost"),
    ("accept", "reject"), ("accepted", "rejected"), ("start", "stop"), ("started", "stopped"),
    ("married", "divorced"), ("enjoy", "dislike"), ("enjoys", "dislikes"), ("before", "after"),
    ("early", "late"), ("allow", "forbid"), ("agree", "disagree"), ("possible", "impossible"),
    ("happy", "sad"), ("old", "new"), ("full", "empty"), ("safe", "dangerous"), ("cheap", "expensive"),
    ("fast", "slow"), ("vegetarian", "carnivore"), ("smoker", "nonsmoker"), ("employed", "unemployed"),
    ("prefer", "avoid"), ("prefers", "avoids"), ("asleep", "awake"), ("quit", "joined"), ("left", "joined"),
]
_ANTONYM_OF: dict[str, set[str]] = {}
for _a, _b in ANTONYMS:
    _ANTONYM_OF.setdefault(_a, set()).add(_b)
    _ANTONYM_OF.setdefault(_b, set()).add(_a)

# A standing instruction to whoever answers: an imperative that holds from now on ("Always include the
# encryption details when I ask about privacy", "Never use passive voice") or one tied to a kind of request
# ("use APA style when I ask about references"). It stays current until revoked or replaced.
INSTRUCTION = re.compile(
    r"^\W*(?:please\s+)?(?:always|never|from now on|going forward|whenever|every time|each time|do not ever|don'?t ever)\b"
    r"|\b(?:when|whenever|if|every time)\s+(?:i|the user|they|we)\s+asks?\b"
    r"|\b(?:i|the user)\s+(?:wants?|needs?|would like)\s+you\s+to\s+always\b")
DIGEST = "digest"  # the claim type of a digest (engram.consolidate.digests): what was said across turns
# no decay, no deprecation: current until revoked or replaced (a digest: until its turns are regrouped)
LASTING_CLAIMS = ("instruction", "preference", DIGEST)
PREFERENCE = re.compile(r"\b(love|loves|like|likes|prefer|prefers|favou?rite|enjoy|enjoys|hate|hates|dislike)\b")
GOAL = re.compile(r"\b(want to|wants to|plan to|plans to|planning to|goal|hope to|hopes to|going to|aim to|dream of)\b")
ASSUMPTION = re.compile(r"\b(maybe|probably|i think|i guess|might|perhaps|assume|seems)\b")
QUESTION_START = re.compile(r"^\s*(what|why|how|when|where|who|which|do|does|did|is|are|can|could|would|will)\b", re.IGNORECASE)
PRONOUN_START = re.compile(r"^\s*(it|this|that|these|those|they|he|she|him|her|them|there)\b", re.IGNORECASE)
FIRST_PERSON = {"i", "my", "me", "we", "our", "us"}  # also as the head of "i'm", "we've", ...


def claim_type(text: str) -> str:
    """instruction | fact | preference | assumption | goal, by simple cues."""
    lower = text.lower()
    if INSTRUCTION.search(lower):
        return "instruction"
    if GOAL.search(lower):
        return "goal"
    if PREFERENCE.search(lower):
        return "preference"
    if ASSUMPTION.search(lower):
        return "assumption"
    return "fact"


def self_containedness(text: str) -> float:
    """0..1: how well a sentence stands alone as a fact (no question, no dangling pronoun, not filler)."""
    score = 1.0
    stripped = text.strip()
    n = len(words(stripped))
    if stripped.endswith("?") or QUESTION_START.match(stripped):
        score -= 0.5
    if PRONOUN_START.match(stripped):
        score -= 0.25
    if FILLER.match(stripped):
        score -= 0.2
    if n < 4:
        score -= 0.4
    elif n > 60:
        score -= 0.2
    return max(score, 0.0)


_ABBREVIATION = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e|No|Mt|Ft|Gen|Col|Lt|Sgt|Capt)|\b[A-Z])\.$")
_PERSONAL = {"i", "you", "we", "he", "she", "they", "it", "my", "your", "our", "his", "her", "their", "its", "me", "us"}
ANSWER_MAX_WORDS = 8


def split_sentences(text: str) -> list[str]:
    """The sentences of a text. An abbreviation or initial ("Mr.", "A.") ends no sentence; a question
    and its answer stay together when the answer is a short phrase, not a sentence of its own
    ("Who coaches the Lions? Dan Campbell." is one statement; "Where? I live in Porto." two)."""
    sentences: list[str] = []
    for s in (s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip())):
        if not s:
            continue
        if sentences and _ABBREVIATION.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {s}"
            continue
        w = words(s)
        if sentences and sentences[-1].endswith("?") and (
            len(w) < 4 or (len(w) <= ANSWER_MAX_WORDS and not any(t.split("'")[0] in _PERSONAL for t in w))
        ):
            sentences[-1] = f"{sentences[-1]} {s}"  # a question and its short answer state one thing together
        else:
            sentences.append(s)
    return sentences


def best_sentence(text: str, max_chars: int = 400) -> str:
    """The most self-contained sentence of a turn (a turn often opens with filler)."""
    sentences = split_sentences(text)
    if not sentences:
        return text.strip()[:max_chars]
    best = max(sentences, key=lambda s: (self_containedness(s), len(s)))
    return best[:max_chars]


# Conversational idioms that carry a negation word but assert, not deny ("can't wait!", "not just a
# hobby", "no matter what"): counted as negations they were most of the alarms between the turns of
# one LoCoMo conversation (bench/quality/QUALITY.md, contradiction section).
NEGATION_IDIOMS = re.compile(
    r"\b(?:can'?t wait|cannot wait|no matter|not just|not only|no problem|no worries|no doubt"
    r"|never mind|nothing but|(?:can|could)'?t (?:believe|imagine|be happier|agree more)"
    r"|not bad|without a doubt|long time no see"
    r"|(?:is|are|was|were|do|does|did|can|could|will|would)n'?t (?:it|you|they|we|he|she|that|there)\?)"
)


@kept_per_text(TEXT_CACHE_SIZE)
def _negations(text: str) -> int:
    low = NEGATION_IDIOMS.sub(" ", text.lower().replace("\u2019", "'"))
    tokens = word_tuple(low)
    if "n't" not in low:  # no token ends with n't: count the listed ones (most texts; a night reads ~10^5)
        return sum(map(NEGATIONS.__contains__, tokens))
    return sum(1 for t in tokens if t in NEGATIONS or t.endswith("n't"))


# A name is a capitalised word ("Lisbon", "Secretariat"). The text's first word (a sentence start,
# or a speaker prefix: "Caroline: ...") and capitalised function words are not names: two speakers
# saying the same thing are two subjects, not a conflict.
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[^\W\d_][\w'\u2019-]*")
_NUMBER = re.compile(r"\b\d+(?:[.,:]\d+)*\b")
_SPEAKER = re.compile(r"^\s*[^\W\d][\w .'-]{0,40}:\s+")
SHARED_FOR_VALUE = 0.5  # share of content words two statements need in common to be about the same thing
NAME_SWAP_MAX_WORDS = 3  # a name swap changes a slot, not the sentence: at most this many words differ


@kept_per_text(TEXT_CACHE_SIZE)
def names(text: str) -> frozenset[str]:
    """Capitalised words past the first (names), lowercased (cached)."""
    first = _TOKEN.search(text)
    if first is None or ((rest := text[first.end():]).isascii() and rest == rest.lower()):
        return frozenset()  # no capital after the first word (ASCII: some Unicode capitals have no lower case)
    tokens = _TOKEN.findall(text)
    return frozenset(low for tok in tokens[1:] if tok[0].isupper() and (low := tok.lower()) not in NOT_NAMES)


MONTHS = frozenset(m.lower() for m in (*calendar.month_name[1:], *calendar.month_abbr[1:]))


def numbered_name(name: str, number: str) -> bool:
    """Whether `number` after the capitalised `name` is part of the name ("User 2", "Player 1"), not a day
    of a month ("May 5") or a year ("June 2020")."""
    return name.lower() not in MONTHS and len(number) <= 3


def frame_of(text: str) -> tuple[str | None, frozenset[str]]:
    """A statement's frame (its content words with values masked) and its values (names and numbers).

    The subject, a name the statement starts with, stays in the frame: "Ann lives in Porto" and
    "Bob lives in Porto" are two frames, and so are "User 1 lives in Porto" and "User 2 lives in Porto".
    (None, {}) for a statement with no value to mask.
    """
    tokens = [m.group() for m in _TOKEN.finditer(text)]
    if not tokens:
        return None, frozenset()
    subject = 0
    while subject < len(tokens) and tokens[subject][0].isupper() and tokens[subject].lower() not in NOT_NAMES:
        subject += 1
    if 0 < subject < len(tokens) and tokens[subject].isdigit() and numbered_name(tokens[subject - 1], tokens[subject]):
        subject += 1
    frame: list[str] = []
    values: list[str] = []
    for i, tok in enumerate(tokens):
        is_value = i >= max(subject, 1) and (
            tok[0].isdigit() or (tok[0].isupper() and tok.lower() not in NOT_NAMES))
        if is_value:
            values.append(tok.lower())
            if not frame or frame[-1] != "?":
                frame.append("?")
        elif tok.lower() not in STATEMENT_STOPWORDS:  # "now", "in", "the" do not change what is stated
            frame.append(tok.lower())
    if not values:
        return None, frozenset()
    return " ".join(frame), frozenset(values)


class _Reading(NamedTuple):
    """What valence_conflict reads of one statement, once per text: its words, and of the statement with
    its speaker prefix left out, the words, the names, the numbers and the content words (no function
    words, no numbers)."""

    words: frozenset[str]
    own_words: frozenset[str]
    names: frozenset[str]
    numbers: frozenset[str]
    content: frozenset[str]


# smaller than the text caches: an entry holds five sets
@kept_per_text(TEXT_CACHE_SIZE // 8)
def _reading(text: str) -> _Reading:
    # values are read from the statement itself: a speaker prefix ("Caroline: ...") is neither a name
    # in the statement nor what it is about
    own = _SPEAKER.sub("", text, count=1)
    own_words = frozenset(word_tuple(own))
    return _Reading(frozenset(word_tuple(text)), own_words, names(own), frozenset(_NUMBER.findall(own)),
                    frozenset(t for t in own_words if t not in STATEMENT_STOPWORDS and not t[0].isdigit()))


def _values(text: str) -> tuple[bool, bool]:
    """Whether a statement (its speaker prefix left out) has a number, and a name."""
    r = _reading(text)
    return bool(r.numbers), bool(r.names)


def may_differ_in_value(a: str, b: str) -> bool:
    """False when valence_conflict(a, b) cannot be "different value": a different value needs numbers on
    both sides or a name on both sides (cheap: valence_conflict asks it before its content-overlap test)."""
    (num_a, name_a), (num_b, name_b) = _values(a), _values(b)
    return (num_a and num_b) or (name_a and name_b)


_ANTONYM_WORDS = frozenset(_ANTONYM_OF)


def valence_signature(text: str) -> tuple[int, bool, bool, bool]:
    """What valence_conflict needs of one statement before it can name a conflict: its negation count,
    whether it has a word of an antonym pair, a number, a name (engram.consolidate.pair_rules.valence_code
    packs them)."""
    return _negations(text), not _ANTONYM_WORDS.isdisjoint(word_tuple(text)), *_values(text)


def valence_conflict(a: str, b: str, swap_excuses: bool = True) -> str | None:
    """Why two similar statements disagree (negation, antonym, different value), or None.

    Negations are counted, not taken modulo 2: "is not X and is not Y" against "is X and is Y"
    differs by two negations and is still a conflict. A different value is a statement about the
    same thing (half the content words shared, and no content word swapped for another) with other
    numbers ("at 9:30" / "at 10:30"), or with one name swapped for another in an otherwise equal
    sentence ("I live in Lisbon" / "I live in Porto"). A content word swapped on each side excuses the
    other value (another thing, not another value of it) unless `swap_excuses` is False, as the merge
    rule asks: two statements with other values never say the same thing.
    """
    if _negations(a) != _negations(b):
        return "negation"
    ra, rb = _reading(a), _reading(b)
    only_a, only_b = ra.words - rb.words, rb.words - ra.words
    for word in only_a:
        if _ANTONYM_OF.get(word, set()) & only_b:
            return "antonym"
    if not may_differ_in_value(a, b):
        return None  # only "different value" is left, and it needs numbers or names on both sides
    va, vb = ra.own_words, rb.own_words
    ma, mb = ra.names, rb.names
    # content words: no function words, no numbers or names (the values)
    ca, cb = ra.content - ma - mb, rb.content - ma - mb
    if len(ca & cb) / max(len(ca | cb), 1) < SHARED_FOR_VALUE:
        return None
    # a content word each side has and the other lacks names another thing, not another value of one
    # ("the last time the Padres made the playoffs: 1998" / "... the Lions ...: 2016"); with
    # swap_excuses=False (the merge rule) other values still keep the two apart
    if swap_excuses and ca - cb and cb - ca:
        return None
    if ra.numbers and rb.numbers and ra.numbers != rb.numbers:
        return "different value"
    # a name the other side also uses anywhere, its speaker included ("Bye Nate!" said by Joanna, "Bye
    # Joanna!" said by Nate), is no swap
    if ma - rb.words and mb - ra.words and max(len(va - vb), len(vb - va)) <= NAME_SWAP_MAX_WORDS:
        return "different value"
    return None
