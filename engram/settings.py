"""Every knob engram reads: one pydantic-settings object, env prefix ENGRAM_."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from engram.errors import InvalidInput

log = logging.getLogger(__name__)

ENV_PREFIX = "ENGRAM_"
# Roles of an agent's own turns (its replies, tool calls, system text), not of the people a memory is about:
# the default of fact_skip_roles, and the turns a search never lifts to the rank of the request before them
AGENT_ROLES = ("assistant", "model", "tool", "system", "ai", "agent", "bot", "function")


def bounded(default: float | int, lo: float | int, hi: float | int, description: str) -> Any:
    """A field whose out-of-range values are clamped to [lo, hi] with a warning."""
    return Field(default, description=description, json_schema_extra={"clamp": [lo, hi]})


class Settings(BaseSettings):
    """Every knob the pipeline reads. Env vars: ENGRAM_<FIELD>."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=".env", extra="ignore", frozen=True
    )

    # store and archive
    db_path: Path = Field(Path("data/engram.duckdb"), description="DuckDB store file.")
    archive_dir: Path = Field(Path("data/archive"), description="Root of the parquet archive.")
    archive_format: Literal["parquet"] = Field("parquet", description="Archive file format.")
    retention_days: int = bounded(30, 0, 3650, "Days a retired row stays live before archiving.")
    auto_mark_removal: bool = Field(
        False, description="Mark staged inner-voice sources for removal automatically."
    )
    lock_timeout_s: float = bounded(30.0, 0.0, 600.0, "How long a writer waits for the DB lock.")
    hold_store_open: bool = Field(
        True, description="Keep the store open across one tenant's nightly stages (faster; other processes wait meanwhile)."
    )
    hold_store_max_s: float = bounded(
        5.0, 0.0, 600.0, "The nightly flow keeps the store open across tenants, reopening it after this many "
        "seconds (a checkpoint; 0 = reopen for every tenant). Needs hold_store_open.")
    nightly_tasks: Literal["tenant", "stage"] = Field(
        "tenant", description="Prefect tasks of the nightly flow: one per tenant (its stages run inside; one log "
        "line with each stage's counts, or the failing stage) or one per stage per tenant (8x the task runs).")
    snapshot_dir: Path | None = Field(
        None, description="Read snapshots for analysts and `engram sql` (default: snapshots/ beside the store)."
    )
    snapshot_keep: int = bounded(2, 1, 100, "Snapshots kept (older ones go unless an `engram sql` reader holds them).")
    snapshot_include_private: bool = Field(False, description="Put private episodes and facts in the read snapshot.")

    # scale out (engram/sharding.py)
    shards: int = bounded(1, 1, 4096, "Tenants spread over this many DuckDB shard files (1 = db_path itself).")
    task_runner: Literal["thread", "dask"] = Field(
        "thread", description="Runner of the sharded nightly flow (dask: ENGRAM_DASK_ADDRESS or a temporary local cluster)."
    )
    dask_address: str | None = Field(
        None, description="Dask scheduler address (e.g. tcp://10.0.0.5:8786); set = run shards on Dask."
    )

    # on-disk search indexes (engram/index/). A new process answers from a published index in
    # ~2 s at 1M facts, against 40-90 s to build the in-memory one (bench/perf/SEARCH.md); below
    # search_index_min_rows the in-memory build takes about a second, so no index is written.
    search_index: bool = Field(
        True, description="Search through on-disk indexes that publish writes (off = every process builds its own in memory)."
    )
    search_index_min_rows: int = bounded(
        10_000, 0, 1_000_000_000,
        "Publish writes a tenant's table index from this many rows on (or when it has one already); smaller tables are searched in memory.",
    )
    search_embed_pending: int = bounded(
        16, 0, 4096,
        "A search embeds up to this many of the tenant's newest episodes the embedding queue has not reached, so they are found by meaning at once (0 = by their words only until embedded). Each costs the search a model run (~4 ms short, ~15 ms a full 256-token window): the embedding worker embeds the rest.",
    )
    embed_on_write: int = bounded(
        16, 0, 4096,
        "A write of at most this many episodes stores their vectors with them when the process already has a "
        "local embedding model loaded (an agent that also searches; never a model load or a network call on a "
        "write): its searches, other readers and the embedding worker then have nothing to embed for them. "
        "Each costs the write a model run (~5 ms for a short text). 0 = writes never embed.",
    )
    nightly_pair_index: bool = Field(
        True, description="Nightly pair search through the published facts index (off = read every fact vector and matmul; bench/perf/CONSOLIDATE.md)."
    )
    index_dir: Path | None = Field(
        None, description="Root of the on-disk search indexes (default: beside the store, <db_path>.indexes)."
    )

    # retrieval
    top_k: int = bounded(5, 1, 50, "Default result count of search_memory called without a budget (Python).")
    max_tokens: int = bounded(
        1500, 1, 1_000_000,
        "Token budget of a read an agent makes (MCP search_memory, engram search): the reply as sent, counted "
        "with the MiniLM WordPiece tokenizer, never exceeds it (engram.query.budget).",
    )
    sim_thresh: float = bounded(0.5, 0.0, 1.0, "Minimum cosine for inner-voice RAG hits.")
    db_limit: int = bounded(500, 1, 100_000, "Maximum rows a single query reads per source.")
    retrieve_top_k: int = bounded(10, 1, 50, "Default top_k of retrieve (snippets).")
    inner_voice_mix: float = bounded(0.6, 0.0, 1.0, "Share of retrieve slots given to the KG.")
    min_floor: float = bounded(0.15, 0.0, 1.0, "Lowest adaptive similarity floor of retrieve.")
    max_candidates_per_source: int = bounded(150, 1, 5000, "Candidate cap per retrieve source.")
    enable_inner_voice: bool = Field(False, description="Enable inner_voice and retrieve.")
    weight_similarity: float = bounded(0.6, 0.0, 1.0, "Ranking weight of similarity.")
    weight_confidence: float = bounded(0.3, 0.0, 1.0, "Ranking weight of confidence.")
    weight_recency: float = bounded(0.1, 0.0, 1.0, "Ranking weight of recency.")

    # embedder
    embedder: Literal["minilm", "hash", "gemini", "sentence-transformers"] = Field(
        "minilm", description="Embedding provider."
    )
    embed_model: str = Field(
        "all-MiniLM-L6-v2-onnx-int8", description="Embedding model name recorded on rows."
    )
    embed_dim: int = bounded(384, 8, 4096, "Embedding dimension.")
    embed_model_path: Path | None = Field(
        None, description="Another ONNX model file for the minilm embedder (sha256 unchecked)."
    )
    embed_batch_size: int = bounded(64, 1, 4096, "Texts per embedder call.")
    hot_path: Literal["auto", "shared", "inbox"] = Field(
        "auto", description="How an agent's process uses the store. auto: as inbox while an embedding worker "
        "watches the store (`engram embed --watch`, the embedding-worker deployment: it folds the inbox within "
        "ENGRAM_EMBED_POLL_S), else as shared; a write of more than 1,000 records goes to the store as in shared. "
        "shared: it writes and reads the store when no other process holds it, and the inbox and the published "
        "indexes when one does (never waiting). inbox: it never opens the store: writes always go to the inbox "
        "(the embedding worker folds them in seconds) and searches always read the published indexes plus the "
        "inbox.")
    inbox_publish_rows: int = bounded(
        500, 0, 10_000_000, "The embedding worker rewrites a tenant's episodes index once this many episodes "
        "written since the last publish wait in its inbox, so a search that reads the inbox (ENGRAM_HOT_PATH=inbox, "
        "or the store held) merges few rows (0 = only the night publishes).")
    background_nice: int = bounded(
        10, 0, 19, "The niceness (Unix CPU priority) the nightly run gives its own process, so an agent's writes "
        "and searches on the same machine get the cores first (0 = unchanged; a process already nicer stays so). "
        "The embedding worker keeps its priority: nothing waits on the night's lock, but the night waits on the "
        "worker's.")
    embed_poll_s: float = bounded(
        2.0, 0.1, 3600.0, "Seconds the embedding worker (`engram embed --watch`, the embedding-worker deployment) "
        "sleeps between passes over the queue: an episode is found by meaning about this long plus its embedding "
        "time after it is added.")

    # LLM
    llm: Literal["none", "fake", "gemini"] = Field("none", description="LLM provider.")
    llm_model: str = Field("gemini-2.5-flash", description="LLM model name.")
    gemini_api_key: SecretStr | None = Field(None, description="Gemini API key (secret).")
    gemini_base_url: str | None = Field(None, description="Override the Gemini endpoint.")
    llm_temperature: float = bounded(0.0, 0.0, 2.0, "LLM sampling temperature.")
    llm_max_prompt_tokens: int = bounded(200_000, 1_000, 2_000_000, "Tokens per LLM request.")
    llm_timeout_s: float = bounded(60.0, 1.0, 600.0, "Timeout of one LLM request.")
    llm_retries: int = bounded(3, 0, 10, "Retries on 429/5xx/timeouts.")
    llm_run_token_budget: int = bounded(1_000_000, 0, 100_000_000, "Tokens one run may spend.")
    llm_mode: Literal["interactive", "batch"] = Field(
        "interactive", description="interactive: LLM calls while the run waits; batch: one Gemini Batch API job "
        "per run, collected by the next run or the collect flow (half the price).")
    llm_batch_resubmits: int = bounded(
        2, 0, 20, "A case whose batch job was lost, cancelled, expired or failed is re-submitted this often.")

    # consolidation
    fact_origins: str = Field(
        "human", description="Turns and thoughts of these origins (comma-separated: human, tool, model) create facts; "
        "the others stay episodes (searchable, support and contradiction only). Events (kind event) of any origin do.")
    fact_skip_roles: str = Field(
        ",".join(AGENT_ROLES), description="Episodes of these roles (comma-separated) "
        "create no facts offline: an agent's own words stay episodes; with an LLM, an agent turn yields a fact only "
        "where it records what the user stated or accepted, citing the user's turn.")
    fact_filter: bool = Field(
        False, description="The offline night leaves out statements a fitted model judges not worth remembering "
        "(requests, talk about the conversation, passing steps: engram/consolidate/worth.py); it reads the "
        "packaged MiniLM's vectors only. Off by default: on the BEAM dev chats it stores a quarter fewer facts "
        "but lowers answer@1500 by .009 (bench/fit/distil/DISTIL_MODEL.md).")
    min_cluster_size: int = bounded(3, 2, 1000, "HDBSCAN min_cluster_size (clusters batch the LLM's extraction).")
    pca_dims: int = bounded(32, 2, 512, "PCA dimensions before clustering.")
    cluster_min_similarity: float = bounded(0.5, 0.0, 1.0, "Members below this cosine to the centroid are noise.")
    recluster_window_days: int = bounded(7, 0, 365, "Unassigned episodes re-clustered this long.")
    digests: bool = Field(
        True, description="The night writes digests: the user's turns about one topic across sessions, and the "
        "sessions each day opened with, each listing its turns (engram/consolidate/digests.py).")
    digest_replies: bool = Field(
        True, description="A digest's line for a human turn also quotes the reply it got in its session (an agent's "
        "turn, attributed to its role), and the digest rests on that reply too.")
    digest_window_days: int = bounded(
        90, 1, 3650, "Digests are rebuilt from the human turns of this many days before the newest new one.")
    initial_confidence: float = bounded(0.5, 0.0, 1.0, "Confidence of a new extracted fact.")
    support_threshold: float = bounded(0.75, 0.0, 1.0, "Cosine for an episode to support a fact.")
    support_gain: float = bounded(0.05, 0.0, 1.0, "c += gain * (1 - c) per supporting episode.")
    decay_rate: float = bounded(0.002, 0.0, 1.0, "c *= exp(-rate * days since evidence) (bench/quality/QUALITY.md).")
    contradiction_threshold: float = bounded(0.8, 0.0, 1.0, "Cosine for a contradiction check (bench/quality/QUALITY.md).")
    merge_threshold: float = bounded(
        0.7, 0.0, 1.0, "Cosine for a merge candidate pair; the pair rule decides (engram/consolidate/pair_rules.py).")
    rule_workers: int = bounded(
        0, 0, 256, "Processes for the pair rules of a night with 20,000+ pairs (0 = one per CPU; 1 = none).")
    auto_merge_min_confidence: float = bounded(0.6, 0.0, 1.0, "Auto-merge needs one fact above.")
    deprecate_below: float = bounded(0.3, 0.0, 1.0, "Facts below become deprecated.")
    passive_min_confidence: float = bounded(0.5, 0.0, 1.0, "Passive retrieval needs at least (engram.query.candidates).")

    # scheduling (deployments/serve.py)
    nightly_cron: str = Field("0 3 * * *", description="Cron of the nightly deployment.")
    nightly_timezone: str = Field("UTC", description="Time zone of the nightly cron (IANA name).")

    # MCP server (engram mcp)
    mcp_user_id: str | None = Field(
        None, description="Tenant (user_id) the MCP server is bound to when `engram mcp` gets no --user."
    )
    mcp_token: SecretStr | None = Field(
        None, description="Bearer token an MCP host must send to `engram mcp --http` (default: generated at first "
        "start into a 0600 file beside the store, <db_path>.mcp-token).")
    mcp_allowed_origins: str = Field(
        "", description="Browser Origins (comma-separated, e.g. http://localhost:3000) `engram mcp --http` accepts; "
        "a request with any other Origin header is refused (empty = none: only hosts that send no Origin).")
    mcp_request_timeout_s: float = bounded(
        30.0, 1.0, 3600.0, "Seconds `engram mcp --http` waits for a request's headers and body before it closes "
        "the connection.")

    # ad hoc SQL (engram sql)
    sql_timeout_s: float = bounded(
        60.0, 0.1, 86_400.0, "Seconds one `engram sql` statement may run before it is interrupted.")
    sql_memory_limit: str = Field(
        "2GB", description="DuckDB memory_limit of `engram sql` (e.g. 512MB, 4GB); a query that needs more fails "
        "with an out-of-memory error instead of taking the machine's memory.")

    # logging
    log_file: Path | None = Field(
        None, description="engram's log file: Prefect's run logs and INFO lines (default: engram.log beside the store)."
    )
    no_log: bool = Field(False, description="Log counters only, nothing about content.")
    debug_content_logging: bool = Field(False, description="Allow memory text in debug logs.")

    @field_validator("*", mode="after")
    @classmethod
    def _clamp(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields[info.field_name]
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if "clamp" not in extra or value is None:
            return value
        if value != value:  # NaN compares false with every bound, so it would slip through
            raise ValueError("must be a number, not NaN")
        lo, hi = extra["clamp"]
        clamped = min(max(value, lo), hi)
        if clamped != value:
            log.warning(
                "%s%s=%s is out of range [%s, %s]; using %s",
                ENV_PREFIX, info.field_name.upper(), value, lo, hi, clamped,
            )
        return type(value)(clamped)

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain values, secrets masked."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "********" if value.get_secret_value() else ""
            elif isinstance(value, Path):
                value = str(value)
            out[name] = value
        return out


def load_settings(**overrides: Any) -> Settings:
    """Build Settings, turning validation errors into one message naming each variable."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "?"
            problems.append(f"{ENV_PREFIX}{field.upper()}: {err['msg']} (got {err.get('input')!r})")
        raise InvalidInput("invalid settings: " + "; ".join(problems)) from None


def log_file_for(settings: Any) -> Path:
    """ENGRAM_LOG_FILE, else engram.log beside the store."""
    return Path(settings.log_file) if settings.log_file else Path(settings.db_path).parent / "engram.log"
