"""Atomic statements: every self-contained sentence of an episode worth remembering, made to stand alone.

"I adopted a dog yesterday" said by Caroline on 8 May 2023 becomes "Caroline adopted a dog yesterday
(7 May 2023)": the speaker resolved (I -> the speaker's name, with the verb agreeing: "I love" ->
"Caroline loves"; "you" -> the listener's name when the turn before was someone else's), relative time
resolved against when it was said (engram.text.dates), and the
moment it is about kept as data (the fact's valid_from). Questions, filler, fragments and sentences
that lean on the previous turn ("That sounds great") are not statements, except an answer to the
question the turn before it asked, which is stored with that question ("Which team did John sign
with? The Minnesota Wolves!"), as a question and its short answer in one turn are. Two independent clauses
joined by "and"/"but"/"so" are two statements, and a first person casual speech drops is put back
("Went hiking yesterday" -> "Caroline went hiking yesterday").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from engram.text.dates import with_absolute_dates
from engram.text.directives import addresses_assistant_setup
from engram.text.markup import prose_blocks
from engram.text.sentences import (
    FIRST_PERSON,
    PRONOUN_START,
    QUESTION_START,
    self_containedness,
    split_sentences,
)
from engram.text.tokens import FILLER_OPENER, STATEMENT_STOPWORDS, words

# Roles that name no one: a statement of "user" is about the user; other generic roles stay first person.
USER_ROLES = {"user", "human"}
GENERIC_ROLES = {"user", "assistant", "system", "tool", "human", "ai", "model", "agent"}
MIN_SELF_CONTAINED = 0.75  # no question, at least four words; a leading pronoun is allowed (filler is cut first)
MIN_CONTENT_WORDS = 1
# A remark about no one it names (no first person, name or number) is remembered only when it says
# enough on its own; one with a pronoun pointing outside itself ("I loved it", "those games") too.
# Chosen on 80 Synthetic-Persona-Chat conversations outside the bench's sample (bench/quality/QUALITY.md).
UNANCHORED_MIN_CONTENT_WORDS = 5
ANAPHOR_MIN_CONTENT_WORDS = 4
ANAPHORS = {"it", "they", "them", "those", "these", "this", "it's", "they're", "they've"}
_ENDS_WITH_THAT = re.compile(r"\bthat\W*$", re.IGNORECASE)
# A verb phrase left out after "to" ("I would love to!", "I've always wanted to.") is the previous
# turn's: the sentence says nothing without it.
_ELIDED_VERB_PHRASE = re.compile(r"\bto\W*$", re.IGNORECASE)
# Verbs and adverbs of stance: a statement whose only content words are these ("I think so too", "I know
# what you mean", "I'm glad we agree") takes a stance on what was said and states nothing itself.
STANCE_WORDS = {"think", "know", "mean", "agree", "guess", "hope", "sure", "glad", "bet", "understand",
                "feel", "see", "imagine", "believe", "suppose", "right", "yeah", "totally", "definitely",
                "probably", "maybe", "exactly", "true", "so"}
SECOND_PERSON = {"you", "your", "yours", "you're", "you've", "you'll", "you'd", "yourself"}
MAX_STATEMENT_CHARS = 400
MODALS = {"can", "could", "will", "would", "shall", "should", "may", "might", "must", "did", "had", "was",
          "used", "ought", "need"}
# modals that are main verbs too: "I need to go" -> "the user needs to go" ("I need not go" stays a modal)
MAIN_VERB_MODALS = {"need"}
# adverbs that sit between a subject and its verb without "-ly" ("I also love", "I never eat")
PRE_VERB_ADVERBS = {"also", "always", "still", "just", "often", "never", "sometimes", "even", "only", "already",
                    "rarely", "seldom", "mostly", "almost", "kinda", "sorta", "totally", "now", "too", "ever"}
# Speech acts that state nothing about the speaker: a proposal for the two of them ("We should play
# sometime", "Let's meet up") and a stance on what a pronoun points at ("I'm sure it'll be fun", "I bet
# you do", "I think they're great"): the speaker's view of something the sentence does not name. A stance on a
# named thing ("I think the museum opens at nine"), on the speaker ("I think my favourite is X") or on a "we"
# the speaker is part of ("I think we're moving to Porto") stays.
_PROPOSAL = re.compile(
    r"^\W*(?:(?:maybe|so|and|but|well|then|oh|hey|perhaps)\W+)*"
    r"(?:let'?s|let us|shall we|we(?:'ll| will| could| should| can| might| must| need to| have to| gotta| ought to))\b",
    re.IGNORECASE)
_STANCE_ON_POINTED = re.compile(
    r"^\W*(?:(?:well|oh|and|but|so)\W+)*i(?:'m| am| can)?\s+(?:(?:really|so|just|also)\s+)?"
    r"(?:bet|hope|think|guess|know|wish|believe|suppose|imagine|see|sure|glad)"
    r"\s+(?:that\s+)?(?:(?:it|they|he|she|this|these|those|you)(?:'[a-z]+)?|that'[a-z]+)\b", re.IGNORECASE)
# "do you" -> "does Ann": the auxiliary agrees with the name that replaces "you"
_AUX_BEFORE_YOU = {"do": "does", "are": "is", "have": "has", "were": "was"}
_YOU = {"you": "{}", "yourself": "{}", "your": "{}'s", "yours": "{}'s", "you're": "{} is", "you've": "{} has",
        "you'll": "{} will", "you'd": "{} would"}
_CONTRACTIONS = {"i'm": "is", "i've": "has", "i'll": "will", "i'd": "would"}
_NEGATED = {"don't": "doesn't", "do": "does", "haven't": "hasn't", "am": "is"}
_TOKEN = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)?|[^A-Za-z]+")
_ANSWERED_QUESTION = re.compile(r"\?\s+\S")
# A question asked after a statement in one sentence: ", can you ...?", " - what ...?", ", so how ...?"
_TRAILING_QUESTION = re.compile(
    r"(?:,|;|\s[-\u2013\u2014]|:)\s+(?:(?:and|but|so|or|then|now|also)\s+)?"
    r"(?:can|could|would|will|should|do|does|did|is|are|was|what|what's|how|why|where|when|which|who|any|shall"
    r"|have|has)\b[^,;]*\?\s*$", re.IGNORECASE)
# ... or a request to the listener after a statement, its question mark left out (", can you help me with that")
_TRAILING_REQUEST = re.compile(
    r"(?:,|;|\s[-\u2013\u2014]|:)\s+(?:(?:and|but|so|or|then|now)\s+)?"
    r"(?:(?:can|could|would|will)\s+you|what\s+do\s+you\s+think|do\s+you\s+have|any\s+(?:tips|advice|ideas|suggestions))"
    r"\b[^,;]*[.!]?\s*$", re.IGNORECASE)
# Two clauses joined by a coordinating conjunction are two statements ("my father is in the army and
# my mom passed away"); the split needs a subject and a finite verb on both sides.
_COORDINATION = re.compile(r",?\s+(?:and|but|so)\s+(?=\S)", re.IGNORECASE)
_SUBJECTLESS = re.compile(r"^\s*(?:(just|really|finally|also|still|recently|actually|totally)\s+)?([A-Za-z]+)\b", re.IGNORECASE)
SUBJECT_PRONOUNS = {"i", "we", "he", "she", "they", "i'm", "i've", "i'll", "i'd", "we're", "we've", "he's",
                    "she's", "they're", "they've"}
POSSESSIVES = {"my", "our", "his", "her", "their"}
FINITE_TAGS = {"VBD", "VBZ", "VBP", "MD"}
AUXILIARIES = {"am", "is", "are", "was", "were", "has", "have", "do", "does"}  # finite whatever else they are


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


@cache
def _third_person(verb: str) -> str | None:
    """'love' -> 'loves', 'go' -> 'goes', 'am' -> 'is'; None when `verb` is not a present base form."""
    lower = verb.lower().replace("\u2019", "'")
    if lower in _NEGATED:
        return _NEGATED[lower]
    if lower in MODALS and lower not in MAIN_VERB_MODALS:
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


# "you" opens a clause after these, so the verb after it agrees with the name ("I hope you have" -> "I hope
# Ann has"); after any other word it is an object ("I'll let you know" -> "I'll let Ann know")
_CLAUSE_BEFORE_YOU = {"that", "if", "when", "because", "since", "as", "while", "and", "but", "so", "or", "think",
                      "hope", "know", "guess", "bet", "believe", "said", "wish", "heard", "remember"}
_YOU_AGREES = {"are": "is", "were": "was", "aren't": "isn't", "weren't": "wasn't"}


def _agreeing_verb(tokens: list[str], i: int, second_person: bool) -> tuple[int, str] | None:
    """The verb after the subject at `i` (or after one adverb: "I really love") and its third-person form."""
    verb_at = _next_word(tokens, i)
    if verb_at is not None and (tokens[verb_at].lower() in PRE_VERB_ADVERBS  # "still", "even" are verbs too
                                or (_third_person(tokens[verb_at]) is None and tokens[verb_at].endswith("ly"))):
        verb_at = _next_word(tokens, verb_at)
    if verb_at is None:
        return None
    low = tokens[verb_at].lower().replace("\u2019", "'")
    after = _next_word(tokens, verb_at)
    if low in MAIN_VERB_MODALS and after is not None and tokens[after].lower() == "not":
        return None
    verb = _YOU_AGREES.get(low) if second_person and low in _YOU_AGREES else _third_person(tokens[verb_at])
    return (verb_at, verb) if verb is not None else None


def _opens_clause_at(tokens: list[str], i: int) -> bool:
    """Whether the word at `i` starts a clause: nothing before it, punctuation, or a clause opener."""
    before = "".join(tokens[:i]).rstrip()
    if not before or not before[-1].isalpha():
        return True
    return before.split()[-1].lower() in _CLAUSE_BEFORE_YOU


def resolve_speaker(sentence: str, name: str | None, listener: str | None = None) -> str:
    """First person singular replaced by the speaker's name ("I love my dog" -> "Ann loves Ann's dog"), and the
    second person by the listener's when the listener is known ("I miss you" -> "Ann misses Tom")."""
    if not name and not listener:
        return sentence
    tokens = _TOKEN.findall(sentence)  # word tokens and the runs between them, in order
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        low = tok.lower().replace("\u2019", "'")
        at_start = not any(t.strip() for t in out)
        # "The user" opens a sentence; inside one it is "the user" (a proper name keeps its case)
        here = name if at_start or name != "The user" else "the user"
        there = listener if at_start or listener != "The user" else "the user"
        subject = bool(name) if low == "i" else bool(listener) and low == "you" and _opens_clause_at(tokens, i)
        if name and low in _CONTRACTIONS:
            out.append(f"{here} {_CONTRACTIONS[low]}")
        elif subject:
            out.append(here if low == "i" else there)
            agreeing = _agreeing_verb(tokens, i, second_person=low == "you")
            if agreeing is not None:
                verb_at, verb = agreeing
                out.extend(tokens[i + 1:verb_at])
                out.append(verb)
                i = verb_at
        elif name and low in ("my", "mine"):
            out.append(f"{here}'s")
        elif name and low in ("me", "myself"):
            out.append(here)
        elif listener and low in _YOU:
            out.append(_YOU[low].format(there))
        else:
            out.append(tok)
        i += 1
    text = "".join(out)
    return text[:1].upper() + text[1:]


@cache
def _finite_verb(word: str) -> bool:
    """A word that can be a finite verb form (past, present, modal) or a contraction carrying one."""
    word = word.lower().replace("\u2019", "'")
    if "'" in word or word in MODALS or word in AUXILIARIES:
        return True
    return bool(_verb_tags(word) & FINITE_TAGS)


def _opens_clause(part: str) -> bool:
    """Whether `part` starts with a subject pronoun or possessive and a finite verb ("I have", "my mom passed")."""
    tokens = words(part)
    if not tokens:
        return False
    if tokens[0] in SUBJECT_PRONOUNS:
        return "'" in tokens[0] or (len(tokens) > 1 and _finite_verb(tokens[1]))
    if tokens[0] in POSSESSIVES:  # "my mom passed", "my older brother lives"
        return any(_finite_verb(t) for t in tokens[2:4])
    return False  # a name could open a clause too, but "Paris and Rome last May" shows why not to guess


@cache
def _verb_tags(word: str) -> frozenset[str]:
    """The Penn tags `word` has as a form of a verb ('went' -> {'VBD'}, 'planning' -> {'VBG'})."""
    from lemminflect import getAllInflections

    lemmas, _ = _inflection()
    return frozenset(tag for base in lemmas(word).get("VERB", ())
                     for tag, forms in getAllInflections(base, upos="VERB").items() if word in forms)


@cache
def _surely_finite(word: str) -> bool:
    """A finite verb no noun or adjective reading makes doubtful ("was", "can", "it's", "grew"; not "trip")."""
    if "'" in word or word in MODALS or word in AUXILIARIES:
        return True
    lemmas, _ = _inflection()
    return bool(_verb_tags(word) & {"VBD", "VBZ", "VBP"}) and not {"NOUN", "ADJ"} & set(lemmas(word))


def restore_subject(sentence: str) -> str:
    """A speaker's first person put back where casual speech drops it: "Went hiking yesterday" ->
    "I went hiking yesterday", "Been busy" -> "I've been busy", "Planning a trip" -> "I'm planning a trip".
    A gerund that is the subject of a later verb ("Exploring the city was awesome") is left alone."""
    m = _SUBJECTLESS.match(sentence)
    if not m:
        return sentence
    word = m.group(2).lower()
    tags = _verb_tags(word)
    rest = sentence[m.start(1) if m.group(1) else m.start(2):]
    rest = rest[:1].lower() + rest[1:]
    if word == "been":
        return f"I've {rest}"
    if "VBD" in tags and not tags & {"VBZ", "VBP", "VB"}:
        return f"I {rest}"
    if tags == {"VBG"} and not any(_surely_finite(w) for w in words(sentence[m.end():])):
        return f"I'm {rest}"
    return sentence


def _without_filler(sentence: str) -> str:
    """The sentence without the interjections it opens with ("Oh, wow, I love it" -> "I love it")."""
    while (m := FILLER_OPENER.match(sentence)) is not None:
        sentence = sentence[m.end():]
        sentence = sentence[:1].upper() + sentence[1:]
    return sentence


def clauses(sentence: str) -> list[str]:
    """A sentence cut at each coordinating conjunction that joins two independent clauses."""
    parts: list[str] = []
    start = 0
    for m in _COORDINATION.finditer(sentence):
        left = sentence[start:m.start()]
        has_verb = _opens_clause(left) or any(_surely_finite(w) for w in words(left))
        if has_verb and _opens_clause(sentence[m.end():]):
            parts.append(left.strip())
            start = m.end()
    parts.append(sentence[start:].strip())
    return [p for p in parts if p]


def _anchored(sentence: str) -> bool:
    """About someone or something a memory can name: first person, a name, or a number."""
    tokens = _TOKEN.findall(sentence)
    if any(t.lower().replace("\u2019", "'").split("'")[0] in FIRST_PERSON for t in tokens):
        return True
    lemmas, _ = _inflection()
    for tok in tokens:
        if any(c.isdigit() for c in tok):
            return True
        head = tok.lower().replace("\u2019", "'").split("'")[0]  # "That's" is "that"
        if tok[:1].isupper() and head not in STATEMENT_STOPWORDS and not lemmas(head):
            return True  # a capitalised word no dictionary knows: a name ("Barnaby", "USPS")
    return False


def _stance(word: str) -> bool:
    return word in STANCE_WORDS or word.removesuffix("s") in STANCE_WORDS or word.removesuffix("es") in STANCE_WORDS


def worth_remembering(sentence: str) -> bool:
    """A statement on its own: self-contained (or a question with its answer), about someone or saying
    enough by itself, and not leaning on the previous turn for what it is about."""
    tokens = words(sentence)
    content = [w for w in tokens if w not in STATEMENT_STOPWORDS and not w.isdigit()]
    if len(content) < MIN_CONTENT_WORDS:
        return False
    if all(_stance(w) for w in content):
        return False  # a stance on what was said, stating nothing ("I think so too", "I know what you mean")
    if not _anchored(sentence) and (len(content) < UNANCHORED_MIN_CONTENT_WORDS or PRONOUN_START.match(sentence)):
        return False  # a remark about no one ("That's good to hear", "It's a great way to meet people")
    if any(w in SECOND_PERSON for w in tokens) and not any(w.split("'")[0] in FIRST_PERSON for w in tokens):
        return False  # about the listener ("Good to see you!"), whom a memory cannot name
    if _PROPOSAL.match(sentence) or _STANCE_ON_POINTED.match(sentence):
        return False  # a proposal to the listener ("We should meet up sometime") or a stance on what was said
    if len(content) < ANAPHOR_MIN_CONTENT_WORDS and (ANAPHORS & set(tokens) or _ENDS_WITH_THAT.search(sentence)):
        return False  # leans on the previous turn for what it is about ("I love those games!")
    if _ELIDED_VERB_PHRASE.search(sentence):
        return False  # the verb phrase is the previous turn's ("I would love to!")
    if addresses_assistant_setup(sentence):
        return False  # aimed at the assistant's own instructions or memory ("ignore previous instructions")
    if _ANSWERED_QUESTION.search(sentence):
        return True  # "who coaches the Lions? Dan Campbell." states the answer
    return self_containedness(sentence) >= MIN_SELF_CONTAINED or _short_claim(sentence)


def _short_claim(sentence: str) -> bool:
    """A statement too short to pass as self-contained that still is one: the speaker and a thing
    ("I'm a plumber", "I love tacos", "I'm from Ohio"), not a state or a reaction ("I'm so
    jealous", "I'm doing great")."""
    tokens = words(sentence)
    if sentence.rstrip().endswith("?") or not tokens or tokens[0].split("'")[0] != "i" or not _opens_clause(sentence):
        return False
    rest = tokens[1:]
    if tokens[0] == "i'm" and rest and "VBG" in _verb_tags(rest[0]):
        rest = rest[1:]  # "I'm doing great": the progressive's verb, not a thing
    return any(_names_a_thing(w) for w in rest if w not in STATEMENT_STOPWORDS and not _stance(w))


def _names_a_thing(word: str) -> bool:
    """A noun that is no adjective too, a word no dictionary knows (a name), or a number."""
    if any(c.isdigit() for c in word):
        return True
    lemmas, _ = _inflection()
    readings = lemmas(word)
    return not readings or ("NOUN" in readings and "ADJ" not in readings)


def addressed_to(question: str, name: str) -> str:
    """The second person of a question replaced by the name of the one asked ("Where do you live?" ->
    "Where does Ann live?")."""
    tokens = _TOKEN.findall(question)
    here = "the user" if name == "The user" else name
    out: list[str] = []
    for i, tok in enumerate(tokens):
        low = tok.lower().replace("\u2019", "'")
        following = _next_word(tokens, i)
        if low in _AUX_BEFORE_YOU and following is not None and tokens[following].lower() == "you":
            out.append(_AUX_BEFORE_YOU[low] if tok.islower() else _AUX_BEFORE_YOU[low].capitalize())
        elif low in _YOU:
            out.append(_YOU[low].format(here))
        else:
            out.append(tok)
    text = "".join(out)
    return text[:1].upper() + text[1:]


def answered_question(question_turn: str, asker_role: str | None, answer_turn: str, answerer_role: str | None,
                      said_at: datetime) -> Statement | None:
    """An answer that states nothing on its own, with the question the turn before it asked: "Which team
    did you sign with?" / "The Minnesota Wolves!" -> "Which team did John sign with? The Minnesota
    Wolves!". None when the turn before asked nothing, the one who answered has no name, or question
    and answer together still say too little to stand alone."""
    answerer = speaker_name(answerer_role)
    asked = [q for q in sentences_of(question_turn) if q.rstrip().endswith("?")]
    said = [a for a in (_without_filler(x) for x in sentences_of(answer_turn) if not x.rstrip().endswith("?"))
            if words(a)]
    if answerer is None or not asked or not said:
        return None
    question = resolve_speaker(addressed_to(asked[-1], answerer), speaker_name(asker_role))
    answer = " ".join(said)
    content = [w for w in words(f"{question} {answer}") if w not in STATEMENT_STOPWORDS and not w.isdigit()]
    if len(content) < ANAPHOR_MIN_CONTENT_WORDS:
        return None  # "Did Ann make it? Yes!" says nothing a memory can use
    dated, about = with_absolute_dates(answer, said_at, nearest=True)
    text = f"{question} {resolve_speaker(dated, answerer, speaker_name(asker_role))}"[:MAX_STATEMENT_CHARS]
    return Statement(text, f"{asked[-1]} {answer}", about)


def sentences_of(content: str) -> list[str]:
    """The sentences of a message's prose (engram.text.markup: markup and code are never statements),
    each block cut on its own so a list item never runs into the next."""
    return [s for block in prose_blocks(content) for s in split_sentences(block)]


def declarative_head(sentence: str) -> str:
    """A statement the speaker makes before asking something in the same sentence, without the question:
    "I'm on Flask 2.3 with 3 workers, how do I scale it?" -> "I'm on Flask 2.3 with 3 workers" (also a
    request without its question mark: "..., can you help me with that"). A sentence that only asks, or
    whose head is no first-person clause, is returned as it is."""
    m = _TRAILING_QUESTION.search(sentence) if sentence.rstrip().endswith("?") else _TRAILING_REQUEST.search(sentence)
    if m is None:
        return sentence
    head = sentence[: m.start()].rstrip(" ,;:-\u2013\u2014")
    first = words(head)[:1]
    if not first or first[0].split("'")[0] not in FIRST_PERSON or QUESTION_START.match(head):
        return sentence
    return head


def atomic_statements(content: str, role: str | None, said_at: datetime,
                      listener_role: str | None = None) -> list[Statement]:
    """The statements of one episode, in order, each standing alone; "you" names the listener when
    `listener_role` (the one who spoke the turn before, in a conversation of two) has a name."""
    name = speaker_name(role)
    listener = speaker_name(listener_role) if listener_role != role else None
    out: list[Statement] = []
    seen: set[str] = set()
    for sentence in (c for s in sentences_of(content) for c in clauses(declarative_head(s))):
        sentence = _without_filler(sentence)
        if name:
            sentence = restore_subject(sentence)
        if not worth_remembering(sentence):
            continue
        dated, about = with_absolute_dates(sentence, said_at, nearest=True)
        text = resolve_speaker(dated, name, listener)[:MAX_STATEMENT_CHARS]
        if text.lower() not in seen:
            seen.add(text.lower())
            out.append(Statement(text, sentence, about))
    return out
