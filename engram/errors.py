"""Typed errors with stable codes, shared by the CLI, the query module and the MCP server."""


class EngramError(Exception):
    """Base error; `code` is stable and safe to show to callers."""

    code = "internal_error"


class InvalidInput(EngramError, ValueError):
    """Bad input; the message names the field (and line, for files)."""

    code = "invalid_params"


class StoreError(EngramError):
    """The DuckDB store cannot be opened or written."""

    code = "db_error"


class EmbedderUnavailable(EngramError):
    """The embedder could not be loaded or did not answer."""

    code = "embedder_unavailable"


class FeatureDisabled(EngramError):
    """A feature gated by a setting was called while off."""

    code = "feature_disabled"


class LLMError(EngramError):
    """The LLM call failed or its reply could not be used."""

    code = "llm_error"


class NotImplementedFeature(EngramError):
    """A feature that exists in the interface but is not built yet."""

    code = "not_implemented"


class StoreMissing(StoreError):
    """No store at the configured path: only init, ingest and demo create one."""

    code = "no_store"


class DiskFull(StoreError):
    """A write found no space left (or the quota used up); the message names the path, nothing was half-written."""

    code = "disk_full"


class InboxCorrupt(StoreError):
    """An inbox file cannot be read (truncated, damaged, of another schema): the message names it."""

    code = "inbox_corrupt"
