"""The one tokenizer: word splitting, stopword lists, stemmers and filler patterns, for search and for statements.

Two readers of text need different things, and where they differ both are kept here, named for their use:

- search (BM25 in engram.index) splits on any Unicode letter or digit, drops SEARCH_STOPWORDS and
  stems with Snowball, so that "running" in a question finds "ran"/"runs" in a memory the way a
  search engine does;
- statements (fact extraction, the pair rules) keep apostrophes ("don't" is a negation), drop
  STATEMENT_STOPWORDS (a longer list: modals, "now", "still", ... do not change what a statement is
  about) and stem with suffix_stem, a crude, symmetric suffix strip that compares two sentences
  without turning "news" into "new".

Merging either pair would change which memories a search returns or which facts merge, so each list
and stemmer stays as its rules were tuned.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

import snowballstemmer

T = TypeVar("T")

# ---------------------------------------------------------------- search tokens (BM25)

_SEARCH_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Function words carry no topic; dropping them lets BM25 weigh the words a question is about.
SEARCH_STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with about as is are was were be been being do
    does did have has had i you he she it we they me him her them my your his its our their this that
    these those what which who whom when where why how not no so than too very can will just from up
    down out over into there here then also am would could should may might shall s t""".split()
)
_snowball = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def snowball_stem(word: str) -> str:
    """Snowball English stem of a lowercased word (the search stemmer)."""
    return _snowball.stemWord(word)


# A longer "word" is a base64 blob, a minified file or a degenerate model output, not a word: it is cut to
# its first MAX_SEARCH_TOKEN_CHARS characters (unstemmed), so no index, cache or array is sized by it. A
# query holding the same blob is cut the same way and still finds it.
MAX_SEARCH_TOKEN_CHARS = 40


def tokenize(text: str) -> list[str]:
    """Search tokens: lowercased word stems without stopwords (Snowball English); an overlong word is cut
    to MAX_SEARCH_TOKEN_CHARS characters."""
    return [snowball_stem(w) if len(w) <= MAX_SEARCH_TOKEN_CHARS else w[:MAX_SEARCH_TOKEN_CHARS]
            for w in _SEARCH_WORD.findall(text.lower()) if w not in SEARCH_STOPWORDS]


# ---------------------------------------------------------------- statement words

_WORD = re.compile(r"[a-z0-9']+")
# The pair rules read the same statement once for every pair it is in (thousands of pairs per night):
# the per-text reads are cached, immutable, bounded.
TEXT_CACHE_SIZE = 1 << 16
# Texts longer than this (an agent's reply of pages) are read each time by the caches of kept_per_text:
# kept, a few thousand of them would hold megabytes.
KEPT_TEXT_MAX = 2_000


def kept_per_text(maxsize: int) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Cache a pure function of one text (lru_cache of `maxsize`) for texts up to KEPT_TEXT_MAX characters;
    a longer text is read each time."""

    def wrap(read: Callable[[str], T]) -> Callable[[str], T]:
        kept = lru_cache(maxsize=maxsize)(read)

        @wraps(read)
        def call(text: str) -> T:
            return kept(text) if len(text) <= KEPT_TEXT_MAX else read(text)

        return call

    return wrap


def words(text: str) -> list[str]:
    """Lowercased word tokens of a statement (apostrophes kept)."""
    return list(word_tuple(text))


@kept_per_text(TEXT_CACHE_SIZE)
def word_tuple(text: str) -> tuple[str, ...]:
    """Lowercased word tokens, as a tuple (cached)."""
    return tuple(_WORD.findall(text.lower().replace("\u2019", "'")))


# Words that may open a sentence capitalised without naming anyone: a capitalised word outside this set,
# past the first, is read as a name.
NOT_NAMES = frozenset({
    "i", "i'm", "i've", "i'd", "i'll", "a", "an", "the", "he", "she", "we", "they", "it", "you", "my", "our",
    "your", "his", "her", "their", "its", "this", "that", "these", "those", "there", "then", "what", "when",
    "where", "who", "why", "how", "which", "and", "but", "or", "so", "yes", "no", "ok", "okay", "oh", "hey",
    "hi", "hello", "thanks", "well", "also", "just", "if", "as", "in", "on", "at", "for", "to", "of", "with",
    "after", "before", "today", "yesterday", "tomorrow", "wow", "sure", "yeah", "great", "cool", "not",
})
# Function words say nothing about what a statement is about: "The team standup happens at 9:30 each
# weekday" and "Our standup is now at 10:30 every weekday" share most of their content words.
STATEMENT_STOPWORDS = NOT_NAMES | {
    "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "has", "have", "had", "will",
    "would", "can", "could", "shall", "should", "may", "might", "must", "now", "each", "every", "very", "too",
    "by", "from", "about", "into", "over", "than", "up", "out", "off", "me", "us", "him", "them", "own", "all",
    "any", "some", "s", "t", "still", "again", "really", "yet",
}


@lru_cache(maxsize=1 << 16)
def suffix_stem(word: str) -> str:
    """A crude, symmetric suffix stem ("running" ~ "runs" ~ "run"), enough to compare two sentences."""
    w = word.replace("\u2019", "'").removesuffix("'s").strip("'")
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(w) > len(suffix) + 2 and w.endswith(suffix) and not w.endswith("ss"):
            w = w[: -len(suffix)] + repl
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiousl":
        w = w[:-1]  # runn -> run, stopp -> stop
    return w


# ---------------------------------------------------------------- filler

# Words that open a turn without stating anything ("Thanks!", "Yeah, ...").
FILLER_WORDS = ("hey", "hi", "hello", "thanks", "thank you", "wow", "cool", "great", "awesome", "lol", "haha",
                "ok", "okay", "yeah", "yes", "no", "sure")
# A sentence that opens with filler stands less well alone as a fact (sentences.self_containedness).
FILLER = re.compile(rf"^\s*({'|'.join(FILLER_WORDS)})\b[!,. ]*", re.I)
# "Yeah, I went hiking" states "I went hiking": an interjection set off by punctuation is cut. More
# words open a sentence this way than make it filler ("well, ...", "so, ...", "totally, ..."): the
# punctuation after them is what marks them, so they join only here.
INTERJECTIONS = (*FILLER_WORDS[:-3], "yep", "yes", "no", "sure", "oh", "ah", "well", "so", "um", "hmm", "totally",
                 "definitely", "absolutely")
FILLER_OPENER = re.compile(rf"^\s*(?:{'|'.join(INTERJECTIONS)})\s*[,!.:;\u2014-]+\s*(?=\w)", re.IGNORECASE)
