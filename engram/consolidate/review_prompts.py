"""Review cases as prompts and replies: batching by token budget, reply schemas, validation.

Pure logic (no I/O). Prompts show memory text only as JSON-encoded records inside a data block,
with short aliases (c1, a/b, f1...) instead of store ids; a reply is mapped back through the
aliases, so an id the request did not contain can never reach the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from engram.llm.base import estimate_tokens
from engram.llm.prompt_quote import DATA_RULE, data_block

KINDS = ("contradiction", "merge")
ACTIONS: dict[str, tuple[str, ...]] = {
    "contradiction": ("keep_a", "keep_b", "keep_both", "both_uncertain"),
    "merge": ("merge", "keep_both", "contradiction"),
}
OUTPUT_TOKENS_PER_CASE = 60  # a decision with a one-sentence reason, for budgeting
MAX_CASES_PER_REQUEST = 400  # keeps one reply well under the model's output limit
REASON_MAX_CHARS = 500


@dataclass(frozen=True)
class SubjectFact:
    """What a reviewer sees of one fact."""

    id: str
    text: str
    claim_type: str
    category: str
    status: str
    confidence: float
    evidence_count: int
    asserted_at: datetime


@dataclass(frozen=True)
class Case:
    """One pending review: its kind, the facts it is about and why it was queued."""

    review_id: str
    kind: str
    subject_ids: tuple[str, ...]
    reason: str | None = None
    attempts: int = 0
    queued_run_id: str | None = None


@dataclass(frozen=True)
class Decision:
    """A validated decision in store ids, ready to apply."""

    review_id: str
    kind: str
    action: str
    reason: str
    winner_id: str | None = None
    pair: tuple[str, str] | None = None

    def as_json(self) -> dict[str, object]:
        """The decision as recorded on the review row."""
        out: dict[str, object] = {"action": self.action, "reason": self.reason}
        if self.winner_id:
            out["winner_id"] = self.winner_id
        if self.pair:
            out["pair"] = list(self.pair)
        return out


# ------------------------------------------------------------------ reply schemas (response_schema)


class ContradictionDecision(BaseModel):
    """The decision on one contradiction case."""

    case: str = Field(description="The case id from the data, e.g. c1.")
    action: Literal["keep_a", "keep_b", "keep_both", "both_uncertain"]
    reason: str = Field(description="One short sentence.")


class ContradictionReply(BaseModel):
    """Decisions on every contradiction case of the request."""

    decisions: list[ContradictionDecision]


class MergeDecision(BaseModel):
    """The decision on one merge case."""

    case: str = Field(description="The case id from the data, e.g. c1.")
    action: Literal["merge", "keep_both", "contradiction"]
    winner: str | None = Field(None, description="For merge: the fact id (f1, f2...) to keep.")
    conflicting: list[str] | None = Field(
        None, description="For contradiction with more than two facts: the two fact ids that conflict.")
    reason: str = Field(description="One short sentence.")


class MergeReply(BaseModel):
    """Decisions on every merge case of the request."""

    decisions: list[MergeDecision]


REPLY_SCHEMAS: dict[str, type[BaseModel]] = {"contradiction": ContradictionReply, "merge": MergeReply}


# ------------------------------------------------------------------ prompts

PREAMBLE = (
    "You maintain the long-term memory of an AI assistant. " + DATA_RULE + " "
    "Decide only from what the memories say. Refer to cases and facts only by the ids given in the data."
)

TASKS = {
    "contradiction": (
        "Each case holds two stored facts, a and b, that were flagged as possibly contradicting each other. "
        "Decide per case: keep_a (a is right or newer and replaces b), keep_b (b replaces a), keep_both "
        "(they do not really conflict, e.g. they hold in different contexts or times), or both_uncertain "
        "(they conflict and the data cannot tell which is right). asserted_at is when the fact was stated; "
        "a later statement of a changed preference or situation usually replaces the older one."
    ),
    "merge": (
        "Each case holds stored facts (f1, f2, ...) that are near-duplicates by wording. Decide per case: "
        "merge (they state the same thing: give the id of the best-worded, most complete fact as winner), "
        "keep_both (they are different facts), or contradiction (they conflict: give the two conflicting "
        "ids in conflicting when the case has more than two facts)."
    ),
}


@dataclass(frozen=True)
class Request:
    """One prompt over a chunk of cases, with the alias maps to read its reply."""

    kind: str
    cases: tuple[Case, ...]
    prompt: str
    case_alias: dict[str, str]            # alias -> review id
    fact_alias: dict[str, dict[str, str]]  # review id -> {alias -> fact id}

    @property
    def estimated_tokens(self) -> int:
        """Prompt tokens plus the expected reply, for the run budget."""
        return estimate_tokens(self.prompt) + OUTPUT_TOKENS_PER_CASE * len(self.cases)


def _fact_record(fact: SubjectFact, alias: str) -> dict[str, object]:
    return {
        "id": alias, "text": fact.text, "type": fact.claim_type, "category": fact.category,
        "asserted_at": fact.asserted_at.isoformat(timespec="seconds"),
        "confidence": round(fact.confidence, 3), "evidence": fact.evidence_count,
    }


def _aliases(case: Case) -> dict[str, str]:
    if case.kind == "contradiction":
        return dict(zip(("a", "b"), case.subject_ids, strict=True))
    return {f"f{n}": fid for n, fid in enumerate(case.subject_ids, 1)}


def _case_record(case: Case, alias: str, facts: dict[str, SubjectFact]) -> dict[str, object]:
    aliases = _aliases(case)
    record: dict[str, object] = {"case": alias, "flagged_because": case.reason or ""}
    if case.kind == "contradiction":
        for short, fid in aliases.items():
            record[short] = _fact_record(facts[fid], short)
    else:
        record["facts"] = [_fact_record(facts[fid], short) for short, fid in aliases.items()]
    return record


def build_prompt(kind: str, records: Sequence[dict[str, object]]) -> str:
    """The full prompt for one request: rules, the task, then the cases as a data block."""
    return "\n\n".join([
        PREAMBLE, TASKS[kind], data_block(records),
        "Return one decision for every case in the data, as JSON matching the response schema.",
    ])


def build_requests(kind: str, cases: Sequence[Case], facts: dict[str, SubjectFact],
                   max_prompt_tokens: int) -> list[Request]:
    """Pack the cases of one kind into as few prompts as max_prompt_tokens allows (order kept)."""
    overhead = estimate_tokens(build_prompt(kind, []))
    chunks: list[list[tuple[Case, dict[str, object]]]] = [[]]
    used = overhead
    for case in cases:
        alias = f"c{len(chunks[-1]) + 1}"
        record = _case_record(case, alias, facts)
        cost = estimate_tokens(data_block([record])) - 8  # minus the markers, counted in overhead
        full = used + cost > max_prompt_tokens or len(chunks[-1]) >= MAX_CASES_PER_REQUEST
        if chunks[-1] and full:
            chunks.append([])
            used = overhead
            record = _case_record(case, "c1", facts)
        chunks[-1].append((case, record))
        used += cost
    requests = []
    for chunk in chunks:
        if not chunk:
            continue
        requests.append(Request(
            kind=kind,
            cases=tuple(c for c, _ in chunk),
            prompt=build_prompt(kind, [r for _, r in chunk]),
            case_alias={str(r["case"]): c.review_id for c, r in chunk},
            fact_alias={c.review_id: _aliases(c) for c, _ in chunk},
        ))
    return requests


# ------------------------------------------------------------------ validation


class ReplyRejected(ValueError):
    """The reply as a whole cannot be trusted; nothing of it is applied."""


def _clip(reason: str) -> str:
    return " ".join(reason.split())[:REASON_MAX_CHARS]


def check_decision(case: Case, action: str, reason: str, winner: str | None = None,
                   conflicting: Sequence[str] | None = None,
                   aliases: dict[str, str] | None = None) -> Decision:
    """One decision validated against its case; ValueError naming the field if it does not fit.

    `winner`/`conflicting` are aliases when `aliases` is given, else store ids (the human path).
    """
    allowed = ACTIONS.get(case.kind, ())
    if action not in allowed:
        raise ValueError(f"action: {action!r} is not one of {list(allowed)} for a {case.kind} case")
    ids = aliases if aliases is not None else {fid: fid for fid in case.subject_ids}
    winner_id = None
    pair = None
    if case.kind == "merge" and action == "merge":
        if winner not in ids:
            raise ValueError(f"winner: {winner!r} is not a fact of this case")
        winner_id = ids[winner]
    if case.kind == "merge" and action == "contradiction":
        chosen = list(conflicting or [])
        if not chosen and len(case.subject_ids) == 2:
            chosen = list(ids)
        if len(chosen) != 2 or len(set(chosen)) != 2 or any(c not in ids for c in chosen):
            raise ValueError(f"conflicting: needs two distinct facts of this case, got {chosen!r}")
        first, second = sorted(ids[c] for c in chosen)
        pair = (first, second)
    return Decision(case.review_id, case.kind, action, _clip(reason), winner_id, pair)


def validate_reply(request: Request, reply: BaseModel) -> tuple[list[Decision], list[Case]]:
    """Decisions of a reply in store ids, and the cases it left out.

    ReplyRejected if any decision names a case or fact the request did not contain, repeats a case,
    or uses an action outside the allowed set: then the whole reply is refused.
    """
    by_id = {c.review_id: c for c in request.cases}
    decided: dict[str, Decision] = {}
    for item in getattr(reply, "decisions", []):
        review_id = request.case_alias.get(item.case)
        if review_id is None:
            raise ReplyRejected(f"case: {item.case!r} was not in the request")
        if review_id in decided:
            raise ReplyRejected(f"case: {item.case!r} decided twice")
        case = by_id[review_id]
        try:
            decided[review_id] = check_decision(
                case, item.action, item.reason, getattr(item, "winner", None),
                getattr(item, "conflicting", None), request.fact_alias[review_id])
        except ValueError as exc:
            raise ReplyRejected(f"case {item.case}: {exc}") from None
    missing = [c for c in request.cases if c.review_id not in decided]
    return list(decided.values()), missing
