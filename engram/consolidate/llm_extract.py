"""LLM extraction of atomic facts from episode clusters: batched prompts, every fact validated.

All clusters of a run go into as few requests as the prompt-token limit allows. Episodes appear
as JSON-encoded data with short aliases (e1, e2...); a fact is kept only if it cites at least one
episode of its own cluster. Invalid facts are dropped with the reason; nothing is written here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from engram.consolidate.review_prompts import PREAMBLE
from engram.llm.base import LLM, LLMBadReply, LLMError, Usage, estimate_tokens
from engram.llm.prompt_quote import data_block
from engram.text.directives import addresses_assistant_setup

log = logging.getLogger(__name__)

CLAIM_TYPES = ("fact", "preference", "assumption", "goal", "instruction")
EPISODE_MAX_CHARS = 4000      # longer episodes are cut in the prompt (the store keeps them whole)
FACT_MAX_CHARS = 1000
OUTPUT_TOKENS_PER_CLUSTER = 80


@dataclass(frozen=True)
class ClusterInput:
    """One cluster: its id, its episodes as (episode_id, role, content, created_at), and those of them an
    agent wrote (assistant, model, tool turns: engram.consolidate.speakers), shown to the model as such."""

    cluster_id: str
    episodes: list[tuple[str, str | None, str, datetime]]
    agent_ids: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ExtractedFact:
    """A validated atomic fact and the episodes of its cluster it rests on."""

    cluster_id: str
    text: str
    claim_type: str
    category: str
    episode_ids: tuple[str, ...]


@dataclass
class ExtractionResult:
    """Facts per cluster, what was dropped and why, clusters without a usable answer, and the spend."""

    facts: list[ExtractedFact] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)   # (cluster_id, reason)
    failed_clusters: list[str] = field(default_factory=list)       # fall back to extractive for these
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def facts_of(self, cluster_id: str) -> list[ExtractedFact]:
        """The facts extracted from one cluster."""
        return [f for f in self.facts if f.cluster_id == cluster_id]


class FactOut(BaseModel):
    """One atomic fact as the model states it."""

    text: str = Field(description="One self-contained claim, third person, no pronouns without referent.")
    claim_type: Literal["fact", "preference", "assumption", "goal", "instruction"]
    category: str = Field(description="One lowercase topic word, e.g. work, health, food, travel.")
    episodes: list[str] = Field(description="Ids (e1, e2...) of the episodes of this cluster it rests on.")


class ClusterOut(BaseModel):
    """The facts of one cluster (an empty list when nothing is worth remembering)."""

    cluster: str = Field(description="The cluster id from the data, e.g. k1.")
    facts: list[FactOut]


class ExtractionReply(BaseModel):
    """Facts for every cluster of the request."""

    clusters: list[ClusterOut]


TASK = (
    "Each record is one cluster of related episodes (conversation turns, thoughts, events) with ids e1, e2, "
    "... Extract the atomic facts worth remembering long-term: one claim per fact, self-contained (name the "
    "person instead of 'I' or 'he' where the data says who it is), no speculation beyond the text. "
    "claim_type: fact, preference, assumption (the speaker's belief or guess), goal or instruction. Cite in episodes "
    "the ids of the episodes of the same cluster that each fact rests on. Return an empty facts list for "
    "a cluster with nothing worth remembering. Facts are what the people the memory is about said or did "
    "(episodes with by: person). An episode with by: agent is the agent's own words: it yields a fact only "
    "where it records something about the user's world that the user stated or accepted in an episode by a "
    "person, attributed as such (\"The user accepted the plan to ...\") and citing that person's episode too; "
    "the agent's advice, explanations, code and formatting are not facts. A fact citing only agent episodes "
    "is dropped. A standing instruction to whoever answers (\"always include X when I ask about Y\") is "
    "claim_type instruction; a lasting preference (\"I prefer concise answers\") is preference."
)


@dataclass(frozen=True)
class ExtractionRequest:
    """One prompt over a chunk of clusters, with the alias maps to read its reply."""

    prompt: str
    cluster_alias: dict[str, str]                 # k1 -> cluster_id
    episode_alias: dict[str, dict[str, str]]      # cluster_id -> {e1 -> episode_id}


def trimmed(episodes: Sequence[tuple[str, str | None, str, datetime]], max_chars: int | None
            ) -> list[tuple[str, str | None, str, datetime]]:
    """A cluster's members up to max_chars of text in all (the first always, cut to the budget); all when None."""
    if max_chars is None:
        return list(episodes)
    kept, used = [], 0
    for eid, role, content, created_at in episodes:
        if kept and used + len(content) > max_chars:
            break
        kept.append((eid, role, content[:max_chars], created_at))
        used += len(content)
    return kept


def _record(cluster: ClusterInput, alias: str, first: int,
            max_chars: int | None = None) -> tuple[dict[str, object], dict[str, str]]:
    eps = []
    aliases = {}
    for n, (eid, role, content, created_at) in enumerate(trimmed(cluster.episodes, max_chars), first):
        aliases[f"e{n}"] = eid
        eps.append({"id": f"e{n}", "role": role or "", "by": "agent" if eid in cluster.agent_ids else "person",
                    "at": created_at.isoformat(timespec="seconds"), "text": content[:EPISODE_MAX_CHARS]})
    return {"cluster": alias, "episodes": eps}, aliases


def build_prompt(records: Sequence[dict[str, object]]) -> str:
    """The extraction prompt: rules, the task, the clusters as a data block."""
    return "\n\n".join([PREAMBLE, TASK, data_block(records),
                        "Return facts for every cluster in the data, as JSON matching the response schema."])


def build_requests(clusters: Sequence[ClusterInput], max_prompt_tokens: int,
                   cluster_max_chars: int | None = None) -> list[ExtractionRequest]:
    """Pack clusters into as few prompts as max_prompt_tokens allows (a huge cluster gets its own);
    with cluster_max_chars, each cluster's members are trimmed to that much text."""
    overhead = estimate_tokens(build_prompt([]))
    requests: list[ExtractionRequest] = []
    records: list[dict[str, object]] = []
    c_alias: dict[str, str] = {}
    e_alias: dict[str, dict[str, str]] = {}
    used, next_ep = overhead, 1

    def flush() -> None:
        if records:
            requests.append(ExtractionRequest(build_prompt(records), dict(c_alias), dict(e_alias)))

    for cluster in clusters:
        record, aliases = _record(cluster, f"k{len(records) + 1}", next_ep, cluster_max_chars)
        cost = estimate_tokens(data_block([record])) + OUTPUT_TOKENS_PER_CLUSTER
        if records and used + cost > max_prompt_tokens:
            flush()
            records, c_alias, e_alias, used, next_ep = [], {}, {}, overhead, 1
            record, aliases = _record(cluster, "k1", next_ep, cluster_max_chars)
        records.append(record)
        c_alias[str(record["cluster"])] = cluster.cluster_id
        e_alias[cluster.cluster_id] = aliases
        used += cost
        next_ep += len(aliases)
    flush()
    return requests


def validate_reply(request: ExtractionRequest, reply: ExtractionReply, result: ExtractionResult) -> None:
    """Keep the valid facts of a reply; record every dropped one with its reason."""
    answered = set()
    for item in reply.clusters:
        cluster_id = request.cluster_alias.get(item.cluster)
        if cluster_id is None:
            result.dropped.append(("?", f"cluster: {item.cluster[:40]!r} was not in the request"))
            continue
        if cluster_id in answered:
            result.dropped.append((cluster_id, f"cluster: {item.cluster!r} answered twice; later answer dropped"))
            continue
        answered.add(cluster_id)
        aliases = request.episode_alias[cluster_id]
        seen: set[str] = set()
        for fact in item.facts:
            text = " ".join(fact.text.split())
            cited = list(dict.fromkeys(fact.episodes))
            outside = [e for e in cited if e not in aliases]
            if not text or len(text) > FACT_MAX_CHARS:
                result.dropped.append((cluster_id, f"text: empty or longer than {FACT_MAX_CHARS} characters"))
            elif not cited:
                result.dropped.append((cluster_id, "episodes: a fact must cite at least one episode"))
            elif outside:
                result.dropped.append((cluster_id, f"episodes: {outside[:5]} are not episodes of this cluster"))
            elif fact.claim_type not in CLAIM_TYPES:
                result.dropped.append((cluster_id, f"claim_type: {fact.claim_type!r} is not allowed"))
            elif text.lower() in seen:
                result.dropped.append((cluster_id, "text: duplicate of another fact of this cluster"))
            elif addresses_assistant_setup(text):
                result.dropped.append((cluster_id, "text: addressed to the assistant's own instructions or memory"))
            else:
                seen.add(text.lower())
                category = "_".join(fact.category.lower().split())[:40] or "general"
                result.facts.append(ExtractedFact(cluster_id, text, fact.claim_type, category,
                                                  tuple(aliases[e] for e in cited)))
    result.failed_clusters += [c for c in request.episode_alias if c not in answered]


def extract_facts(llm: LLM, clusters: list[ClusterInput], max_prompt_tokens: int = 200_000,
                  token_budget: int | None = None) -> ExtractionResult:
    """Atomic facts per cluster from as few LLM requests as the limits allow; invalid facts dropped."""
    result = ExtractionResult()
    ids = [c.cluster_id for c in clusters]
    if len(set(ids)) != len(ids):
        raise ValueError("cluster_id: must be unique within one call")
    for request in build_requests([c for c in clusters if c.episodes], max_prompt_tokens):
        estimate = estimate_tokens(request.prompt) + OUTPUT_TOKENS_PER_CLUSTER * len(request.cluster_alias)
        if token_budget is not None and result.usage.tokens + estimate > token_budget:
            result.failed_clusters += list(request.episode_alias)
            result.errors.append(f"token budget {token_budget} reached: {len(request.cluster_alias)} cluster(s) skipped")
            continue
        try:
            reply = llm.generate(request.prompt, ExtractionReply)
        except LLMBadReply as exc:
            result.usage.add_failed(llm.model, request.prompt, exc.spent)
            result.failed_clusters += list(request.episode_alias)
            result.errors.append(f"{exc.code}: {exc}")
            continue
        except LLMError as exc:
            result.usage.add_failed(llm.model, request.prompt, (0, 0, 0.0))
            result.failed_clusters += list(request.episode_alias)
            result.errors.append(f"{exc.code}: {exc}")
            continue
        result.usage.add(reply)
        validate_reply(request, reply.parsed, result)  # type: ignore[arg-type]
    result.failed_clusters += [c.cluster_id for c in clusters if not c.episodes]
    log.info("extraction: %d cluster(s), %d fact(s), %d dropped, %d failed, %d request(s)", len(clusters),
             len(result.facts), len(result.dropped), len(result.failed_clusters), result.usage.requests)
    return result
