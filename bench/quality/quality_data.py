"""Loaders of the evaluation datasets (paths are arguments; any split of the same source loads)."""

from __future__ import annotations

import csv
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput

csv.field_size_limit(10**8)


@dataclass(frozen=True)
class Pair:
    """A labelled sentence pair."""

    a: str
    b: str
    label: bool
    relatedness: float | None = None
    judgment: str | None = None


def _read(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InvalidInput(f"data: cannot read {path}: {exc}") from exc


def _need(row: dict[str, Any], keys: tuple[str, ...], path: Path) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise InvalidInput(f"data: {Path(path).name} lacks column(s) {missing}")


def load_msrp(path: Path) -> list[Pair]:
    """MSRP tsv (Quality, #1 ID, #2 ID, #1 String, #2 String); label = paraphrase."""
    lines = _read(path).splitlines()
    if not lines:
        return []
    header = lines[0].split("\t")
    _need(dict.fromkeys(header), ("Quality", "#1 String", "#2 String"), path)
    qi, ai, bi = header.index("Quality"), header.index("#1 String"), header.index("#2 String")
    out = []
    for line in lines[1:]:
        cols = line.split("\t")  # strings carry raw quotes: never let csv unquote them
        if len(cols) < len(header):
            continue
        out.append(Pair(cols[ai].strip(), cols[bi].strip(), cols[qi].strip() == "1"))
    return out


def load_sick(path: Path) -> list[Pair]:
    """SICK tsv (sentence_A, sentence_B, relatedness_score, entailment_judgment); label = ENTAILMENT."""
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        rows = list(reader)
    if rows:
        _need(rows[0], ("sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"), path)
    return [
        Pair(r["sentence_A"].strip(), r["sentence_B"].strip(), r["entailment_judgment"].strip() == "ENTAILMENT",
             float(r["relatedness_score"]), r["entailment_judgment"].strip())
        for r in rows
    ]


def load_nli_binary(path: Path) -> list[Pair]:
    """Binarised NLI csv (sentence1, sentence2, label); label 1 = contradiction."""
    with open(path, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    if rows:
        _need(rows[0], ("sentence1", "sentence2", "label"), path)
    return [Pair(r["sentence1"].strip(), r["sentence2"].strip(), r["label"].strip() == "1") for r in rows]


_DATE_FORMATS = ("%Y", "%B %d, %Y", "%b %d, %Y", "%Y-%m-%d", "%d %B %Y")


def parse_date(text: str) -> datetime | None:
    """SituatedQA dates ('2021', 'January 27, 2021'); None when unparsable."""
    cleaned = re.sub(r"\s+", " ", str(text).strip())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    return None


@dataclass
class TemporalQuestion:
    """One SituatedQA question: dated answer starts (updates) and dated probes with the answer then."""

    id: str
    question: str
    starts: list[tuple[datetime, str]] = field(default_factory=list)
    probes: list[tuple[datetime, str]] = field(default_factory=list)

    @property
    def current(self) -> str:
        """The answer of the latest start."""
        return max(self.starts)[1]


def load_situatedqa(path: Path, min_answers: int = 2) -> list[TemporalQuestion]:
    """Questions whose answer changed at least once (>= min_answers distinct dated 'start' answers)."""
    groups: dict[str, TemporalQuestion] = {}
    for n, line in enumerate(_read(path).splitlines()):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"data: {Path(path).name} line {n + 1} is not JSON") from exc
        _need(row, ("question", "id", "date", "date_type", "answer"), path)
        when = parse_date(row["date"])
        answers = row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
        if when is None or not answers or not str(answers[0]).strip():
            continue
        q = groups.setdefault(str(row["id"]), TemporalQuestion(str(row["id"]), str(row["question"]).strip()))
        target = q.starts if row["date_type"] == "start" else q.probes
        target.append((when, str(answers[0]).strip()))
    out = []
    for q in groups.values():
        starts = sorted(set(q.starts))
        dates = [d for d, _ in starts]
        if len({a for _, a in starts}) < min_answers or len(set(dates)) != len(dates):
            continue  # two answers starting the same day have no defined order
        q.starts = starts
        # a probe is only scored where the starts define the answer: after the first start
        q.probes = sorted({(d, a) for d, a in q.probes if d >= dates[0]})
        out.append(q)
    return sorted(out, key=lambda q: q.id)


def answer_at(q: TemporalQuestion, when: datetime) -> str:
    """The answer valid at `when` by the starts (the latest start not after it)."""
    valid = [a for d, a in q.starts if d <= when]
    return valid[-1] if valid else q.starts[0][1]


@dataclass
class PersonaChat:
    """One Synthetic-Persona-Chat conversation: turns (speaker, text) and gold persona facts per speaker."""

    id: str
    turns: list[tuple[str, str]]
    personas: dict[str, list[str]]


_TURN = re.compile(r"^\s*(User \d+)\s*:\s*(.*)$")


def load_spc(path: Path, limit: int | None = None, seed: int = 0) -> list[PersonaChat]:
    """Conversations with gold personas; a seeded sample of `limit` when given (same sample every run)."""
    with open(path, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    if rows:
        _need(rows[0], ("user 1 personas", "user 2 personas", "Best Generated Conversation"), path)
    chats = []
    for n, r in enumerate(rows):
        turns = []
        for line in r["Best Generated Conversation"].splitlines():
            m = _TURN.match(line)
            if m and m.group(2).strip():
                turns.append((m.group(1), m.group(2).strip()))
            elif turns and line.strip():  # a wrapped line continues the previous turn
                turns[-1] = (turns[-1][0], f"{turns[-1][1]} {line.strip()}")
        personas = {
            "User 1": [x.strip() for x in r["user 1 personas"].splitlines() if x.strip()],
            "User 2": [x.strip() for x in r["user 2 personas"].splitlines() if x.strip()],
        }
        if turns:
            chats.append(PersonaChat(f"spc-{n}", turns, personas))
    if limit is not None and limit < len(chats):
        chats = sorted(random.Random(seed).sample(chats, limit), key=lambda c: int(c.id.split("-")[1]))
    return chats


@dataclass(frozen=True)
class Observation:
    """A LoCoMo gold observation: the speaker it is about, its text, the turns it rests on."""

    sample_id: str
    speaker: str
    text: str
    evidence: tuple[str, ...]


def load_locomo_observations(path: Path) -> list[Observation]:
    """Every per-session observation of a LoCoMo file, evidence ids normalised ('D8:6')."""
    from bench.quality.locomo import evidence_ids

    try:
        data = json.loads(_read(path))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"data: {Path(path).name} is not JSON") from exc
    out = []
    for sample in data if isinstance(data, list) else [data]:
        sid = str(sample.get("sample_id", "conv"))
        for session in (sample.get("observation") or {}).values():
            for speaker, items in (session or {}).items():
                for item in items:
                    if not isinstance(item, list) or not item:
                        continue
                    ev = item[1] if len(item) > 1 else []
                    out.append(Observation(sid, speaker, str(item[0]).strip(),
                                           tuple(evidence_ids(ev if isinstance(ev, list) else [ev]))))
    return out


def by_sample(observations: list[Observation]) -> dict[str, list[Observation]]:
    """Observations grouped by conversation."""
    out: dict[str, list[Observation]] = defaultdict(list)
    for o in observations:
        out[o.sample_id].append(o)
    return out
