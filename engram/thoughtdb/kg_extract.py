"""Heuristic knowledge-graph extractor: entities and subject-verb-object relations from text.

Pure Python and deterministic (no model, no network), so nightly extraction and inner-voice
staging can run it on every episode. Candidates it finds are staged for moderation
(`stage_candidates`), never written to kg_entities directly.

Entity rules, in priority order (a span taken by an earlier rule is not reused):
  url, email, money, date (ISO, "5 March 2024", "March 5, 2024"), quoted term,
  known tool/language (small fixed list), capitalised name (runs of capitalised words,
  "of"/"de"/"van"/"von" allowed inside). A capitalised word at sentence start counts only when
  the name is multiword after dropping a leading function word, or the same name appears again
  elsewhere in the text (capitalisation there is just grammar).
Relation rule: inside one sentence, two consecutive entities joined by a short verb phrase
  ("uses", "works at", "migrated to") give (subject, verb phrase, object); objects coordinated
  with "and"/"," after a relation share it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pyarrow as pa

from engram.errors import InvalidInput
from engram.store import db
from engram.text.normalize import normalize, stable_id

ENTITY_TYPES = ("url", "email", "money", "date", "term", "tool", "organization", "name")

TOOLS = {
    # languages
    "python", "rust", "javascript", "typescript", "java", "kotlin", "scala", "golang", "c++", "c#",
    "ruby", "php", "swift", "haskell", "elixir", "erlang", "julia", "sql", "bash", "lua", "perl",
    # data and infrastructure
    "duckdb", "postgres", "postgresql", "mysql", "sqlite", "redis", "kafka", "spark", "snowflake",
    "bigquery", "clickhouse", "mongodb", "elasticsearch", "parquet", "arrow", "polars", "pandas",
    "numpy", "pytorch", "tensorflow", "docker", "kubernetes", "terraform", "ansible", "linux",
    "git", "github", "gitlab", "prefect", "airflow", "dagster", "dbt", "fastapi", "django",
    "flask", "react", "vue", "node.js", "nodejs", "aws", "gcp", "azure", "vim", "emacs", "vscode",
}

# Capitalised words that are grammar or calendar words, never a name on their own.
_FUNCTION_WORDS = {
    "a", "an", "the", "this", "that", "these", "those", "i", "we", "you", "he", "she", "it", "they",
    "my", "our", "your", "his", "her", "its", "their", "me", "us", "him", "them", "and", "or",
    "but", "so", "if", "when", "then", "after", "before", "yesterday", "today", "tomorrow",
    "also", "however", "maybe", "please", "yes", "no", "ok", "okay", "hi", "hello", "thanks",
    "there", "here", "what", "why", "how", "who", "where", "which", "let", "lets", "let's", "i'm",
    "i've", "i'll", "i'd", "it's", "don't", "can't", "on", "in", "at", "for", "with", "from",
    "to", "of", "by", "as", "is", "was", "are", "were", "be", "do", "did", "does", "not", "just",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "mr", "mrs", "ms", "dr",
}
_NAME_JOINERS = {"of", "de", "van", "von", "der", "la", "le", "da", "di", "del"}
_ORG_SUFFIXES = {"inc", "corp", "ltd", "llc", "gmbh", "co", "company", "labs", "university", "foundation"}

# Verb phrases the relation rule recognises with high confidence (first word, lowercase).
_KNOWN_VERBS = {
    "uses", "use", "used", "using", "is", "was", "are", "were", "works", "worked", "joined",
    "left", "moved", "migrated", "switched", "prefers", "preferred", "likes", "liked", "loves",
    "hates", "owns", "owned", "founded", "built", "builds", "wrote", "writes", "manages", "managed",
    "leads", "led", "created", "creates", "met", "married", "visited", "visits", "lives", "lived",
    "acquired", "acquires", "depends", "replaced", "replaces", "runs", "ran", "maintains",
    "maintained", "hired", "reports", "reported", "knows", "knew", "contacted", "emailed", "called",
    "attended", "studied", "teaches", "taught", "supports", "supported", "deployed", "deploys",
    "released", "published", "owes", "paid", "pays", "bought", "sold", "sent",
    "chose", "picked", "adopted", "recommended", "recommends", "mentioned", "mentions",
    "has", "had", "needs", "needed", "wants", "wanted", "starts", "started", "plans", "planned",
}
_PARTICLES = {"at", "in", "to", "for", "with", "on", "from", "of", "by", "into", "over", "about", "as", "up"}
_SKIP_IN_RELATION = {"a", "an", "the", "also", "now", "still", "recently", "really", "just", "then",
                     "already", "finally", "often", "always", "never", "usually", "mostly", "not"}
_COORD = re.compile(r"^\s*(,\s*(and\s+)?|and\s+|or\s+|&\s*)$", re.IGNORECASE)

_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
           r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_PATTERNS: list[tuple[str, re.Pattern[str], float]] = [
    ("url", re.compile(r"\bhttps?://[^\s<>\"')\]]+[^\s<>\"')\].,;:!?]"), 0.95),
    ("email", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b"), 0.95),
    ("money", re.compile(
        r"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|bn|million|billion|thousand)\b)?)"
        r"|(?:\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|JPY|CHF|dollars|euros|pounds)\b)"), 0.9),
    ("date", re.compile(
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b"
        rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS}\.?,?\s+\d{{4}}\b"
        rf"|\b{_MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
        r"|\b\d{1,2}/\d{1,2}/\d{4}\b"), 0.9),
    ("term", re.compile(r"\"([^\"\n]{2,60})\"|“([^”\n]{2,60})”|‘([^’\n]{2,60})’"), 0.7),
]
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9][\w'’.+#-]*[\w+#]|[A-Za-z0-9]")


@dataclass(frozen=True)
class EntityCandidate:
    """One entity found in text; norm_name is the dedupe key."""

    name: str
    norm_name: str
    entity_type: str
    confidence: float


@dataclass(frozen=True)
class RelationCandidate:
    """One (subject, relation, object) triple between extracted entities."""

    src_name: str
    relation: str
    dst_name: str
    confidence: float


@dataclass(frozen=True)
class KGExtraction:
    """Everything the extractor found in one text, deterministic order."""

    entities: list[EntityCandidate] = field(default_factory=list)
    relations: list[RelationCandidate] = field(default_factory=list)


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    name: str
    entity_type: str
    confidence: float


def norm_name(name: str) -> str:
    """The dedupe key of an entity name: NFKC, casefolded, whitespace collapsed, outer quotes dropped."""
    text = normalize(name).casefold()
    return text.strip(" \"'“”‘’`.,;:!?()[]{}")


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of text."""
    bounds: list[tuple[int, int]] = []
    pos = 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > pos:
            bounds.append((pos, match.start()))
        pos = match.end()
    if pos < len(text):
        bounds.append((pos, len(text)))
    return bounds


def _free(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in taken)


def _pattern_spans(sentence: str, offset: int, taken: list[tuple[int, int]]) -> list[_Span]:
    """Spans of the typed patterns (url, email, money, date, quoted term) in one sentence."""
    spans: list[_Span] = []
    for entity_type, pattern, conf in _PATTERNS:
        for m in pattern.finditer(sentence):
            start, end = m.start() + offset, m.end() + offset
            if not _free(taken, start, end):
                continue
            name = next((g for g in m.groups() if g), m.group(0)) if m.groups() else m.group(0)
            name = name.strip()
            if not norm_name(name):
                continue
            taken.append((start, end))
            spans.append(_Span(start, end, name, entity_type, conf))
    return spans


def _word_spans(sentence: str, offset: int, taken: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """Words of a sentence not covered by a typed span, with absolute offsets."""
    out = []
    for m in _WORD.finditer(sentence):
        start, end = m.start() + offset, m.end() + offset
        if _free(taken, start, end):
            out.append((start, end, m.group(0).rstrip(".")))
    return out


def _is_cap(word: str) -> bool:
    return word[:1].isupper() and word.lower() not in _FUNCTION_WORDS


def _name_spans(text: str, sentence: tuple[int, int], taken: list[tuple[int, int]]) -> list[tuple[_Span, bool]]:
    """Tool and capitalised-name spans of one sentence; the flag says 'starts the sentence'."""
    s0, s1 = sentence
    words = _word_spans(text[s0:s1], s0, taken)
    first_word_start = words[0][0] if words else None
    found: list[tuple[_Span, bool]] = []
    i = 0
    while i < len(words):
        start, end, word = words[i]
        if word.lower() in TOOLS:
            found.append((_Span(start, end, word, "tool", 0.85), False))
            i += 1
            continue
        if not _is_cap(word):
            i += 1
            continue
        j = i + 1
        last = i
        while j < len(words):
            _, _, nxt = words[j]
            gap = text[words[j - 1][1]:words[j][0]]
            if gap.strip() not in ("", "&"):
                break  # punctuation between words ends the name
            if _is_cap(nxt) and nxt.lower() not in TOOLS:
                last = j
                j += 1
            elif nxt.lower() in _NAME_JOINERS and j + 1 < len(words) and _is_cap(words[j + 1][2]):
                j += 1
            else:
                break
        span_words = words[i:last + 1]
        name = text[span_words[0][0]:span_words[-1][1]]
        multi = len(span_words) > 1
        is_org = span_words[-1][2].lower().rstrip(".") in _ORG_SUFFIXES and multi
        entity_type = "organization" if is_org else "name"
        conf = 0.75 if multi else 0.6
        found.append((_Span(span_words[0][0], span_words[-1][1], name, entity_type, conf),
                      start == first_word_start))
        i = last + 1
    # A sentence-initial capital preceded by a function word ("The Acme team") was skipped above;
    # a sentence-initial single word is kept only if repeated (decided by the caller).
    return found


def _relation_phrase(between: str) -> tuple[str, float] | None:
    """A relation label from the words between two entities, or None if they are not a verb phrase."""
    if any(ch in between for ch in ";:()[]\"“”"):
        return None
    words = [w.lower().strip(",'’") for w in re.findall(r"[A-Za-z'’]+", between)]
    words = [w for w in words if w and w not in _SKIP_IN_RELATION]
    if not words or len(words) > 4:
        return None
    verb = words[0]
    if verb in _KNOWN_VERBS:
        conf = 0.8
    elif len(verb) > 3 and (verb.endswith("ed") or (verb.endswith("s") and not verb.endswith("ss"))):
        conf = 0.55
    else:
        return None
    rest = words[1:]
    if any(w not in _PARTICLES and w not in _KNOWN_VERBS for w in rest):
        return None  # something other than particles: not a clean verb phrase
    return "_".join(words), conf


def extract_candidates(text: str) -> KGExtraction:
    """Entities and relations found in text by the heuristic rules in this module's docstring."""
    if not text or not text.strip():
        return KGExtraction()
    per_sentence: list[list[tuple[_Span, bool]]] = []
    for sentence in _sentences(text):
        taken: list[tuple[int, int]] = []
        typed = [(s, False) for s in _pattern_spans(text[sentence[0]:sentence[1]], sentence[0], taken)]
        spans = typed + _name_spans(text, sentence, taken)
        per_sentence.append(sorted(spans, key=lambda item: item[0].start))

    counts: dict[str, int] = {}
    for spans in per_sentence:
        for span, _ in spans:
            key = norm_name(span.name)
            counts[key] = counts.get(key, 0) + 1

    best: dict[str, EntityCandidate] = {}
    kept_per_sentence: list[list[_Span]] = []
    for spans in per_sentence:
        kept: list[_Span] = []
        for span, at_start in spans:
            key = norm_name(span.name)
            if not key:
                continue
            multi = " " in span.name.strip()
            if at_start and span.entity_type in ("name", "organization") and not multi and counts[key] < 2:
                continue
            conf = min(0.95, span.confidence + (0.1 if counts[key] > 1 else 0.0))
            kept.append(_Span(span.start, span.end, span.name, span.entity_type, conf))
            prev = best.get(key)
            if prev is None or conf > prev.confidence:
                name = prev.name if prev else span.name
                best[key] = EntityCandidate(name, key, span.entity_type if prev is None else prev.entity_type, conf)
        kept_per_sentence.append(kept)

    relations: dict[tuple[str, str, str], RelationCandidate] = {}
    for kept in kept_per_sentence:
        last_rel: tuple[_Span, str, float] | None = None
        for a, b in zip(kept, kept[1:]):
            between = text[a.end:b.start]
            phrase = _relation_phrase(between)
            if phrase is not None:
                src, label, conf = a, phrase[0], phrase[1]
            elif last_rel is not None and _COORD.match(between):
                src, label, conf = last_rel[0], last_rel[1], last_rel[2]
            else:
                last_rel = None
                continue
            if norm_name(src.name) == norm_name(b.name):
                continue
            rel_conf = round(min(src.confidence, b.confidence) * conf, 4)
            key = (norm_name(src.name), label, norm_name(b.name))
            prev = relations.get(key)
            if prev is None or rel_conf > prev.confidence:
                relations[key] = RelationCandidate(best[key[0]].name, label, best[key[2]].name, rel_conf)
            last_rel = (src, label, conf)

    entities = sorted(best.values(), key=lambda e: (-e.confidence, e.norm_name))
    rels = sorted(relations.values(), key=lambda r: (-r.confidence, norm_name(r.src_name), r.relation,
                                                     norm_name(r.dst_name)))
    return KGExtraction(entities=entities, relations=rels)


_ENTITY_SCHEMA = pa.schema({
    "id": pa.string(), "user_id": pa.string(), "name": pa.string(), "norm_name": pa.string(),
    "entity_type": pa.string(), "confidence": pa.float64(), "source_thought_id": pa.string(),
    "created_at": pa.timestamp("us"),
})
_EDGE_SCHEMA = pa.schema({
    "id": pa.string(), "user_id": pa.string(), "src_name": pa.string(), "relation": pa.string(),
    "dst_name": pa.string(), "confidence": pa.float64(), "source_thought_id": pa.string(),
    "created_at": pa.timestamp("us"),
})


def stage_candidates(
    con: db.Connection,
    user_id: str,
    source_thought_id: str,
    extraction: KGExtraction,
    max_nodes: int,
    max_edges: int,
    confidence_min: float,
    now: datetime | None = None,
) -> tuple[int, int]:
    """Insert the extraction's candidates (status pending) for moderation; returns (entities, edges) newly staged.

    Ids are stable per (tenant, source thought, normalised name / triple), so staging the same
    thought again inserts nothing. Only the `max_nodes` most confident entities at or above
    `confidence_min` are kept, and only edges between kept entities (at most `max_edges`).
    Runs inside the caller's transaction, if any.
    """
    if not user_id:
        raise InvalidInput("user_id: required")
    if not source_thought_id:
        raise InvalidInput("source_thought_id: required")
    if max_nodes < 0 or max_edges < 0:
        raise InvalidInput("max_nodes/max_edges: must be >= 0")
    if not 0.0 <= confidence_min <= 1.0:
        raise InvalidInput("confidence_min: must be within [0, 1]")
    now = now or datetime.now(timezone.utc).replace(tzinfo=None)
    entities = [e for e in extraction.entities if e.confidence >= confidence_min and e.norm_name]
    entities = sorted(entities, key=lambda e: (-e.confidence, e.norm_name))[:max_nodes]
    kept = {e.norm_name for e in entities}
    edges = [
        r for r in extraction.relations
        if r.confidence >= confidence_min and norm_name(r.src_name) in kept and norm_name(r.dst_name) in kept
    ]
    edges = sorted(edges, key=lambda r: (-r.confidence, norm_name(r.src_name), r.relation,
                                         norm_name(r.dst_name)))[:max_edges]
    entity_rows = [
        {"id": stable_id("kgc", user_id, source_thought_id, e.norm_name), "user_id": user_id,
         "name": e.name, "norm_name": e.norm_name, "entity_type": e.entity_type,
         "confidence": float(e.confidence), "source_thought_id": source_thought_id, "created_at": now}
        for e in entities
    ]
    edge_rows = [
        {"id": stable_id("kgec", user_id, source_thought_id, norm_name(r.src_name), r.relation,
                         norm_name(r.dst_name)),
         "user_id": user_id, "src_name": r.src_name, "relation": r.relation, "dst_name": r.dst_name,
         "confidence": float(r.confidence), "source_thought_id": source_thought_id, "created_at": now}
        for r in edges
    ]
    n_entities = n_edges = 0
    if entity_rows:
        with db.registered(con, "incoming_kg_entities", pa.Table.from_pylist(entity_rows, schema=_ENTITY_SCHEMA)):
            n_entities = int(db.rows(con, "queries/thoughtdb/thought_stage_kg_entity_candidates")[0][0])
    if edge_rows:
        with db.registered(con, "incoming_kg_edges", pa.Table.from_pylist(edge_rows, schema=_EDGE_SCHEMA)):
            n_edges = int(db.rows(con, "queries/thoughtdb/thought_stage_kg_edge_candidates")[0][0])
    return n_entities, n_edges
