"""The LLM seam: the interface (base), the Gemini client, the fake, usage and cost; from_settings picks one."""

from __future__ import annotations

from engram.llm.base import LLM, BatchLLM
from engram.settings import Settings


def from_settings(settings: Settings) -> LLM | None:
    """The configured LLM, or None when ENGRAM_LLM=none (cases then stay queued)."""
    if settings.llm == "none":
        return None
    if settings.llm == "fake":
        from engram.llm.fake import FakeLLM
        from engram.llm.fake_rules import rule_based_responder

        return FakeLLM(rule_based_responder)
    from engram.llm.gemini import GeminiLLM

    return GeminiLLM(settings)


def batch_from_settings(settings: Settings, force: bool = False) -> BatchLLM | None:
    """The batch client when ENGRAM_LLM_MODE=batch (or `force`: collecting jobs after switching back to
    interactive) and an LLM is configured, else None."""
    if settings.llm == "none" or (settings.llm_mode != "batch" and not force):
        return None
    if settings.llm == "fake":
        from engram.llm.fake import FakeBatch
        from engram.llm.fake_rules import rule_based_responder

        return FakeBatch(rule_based_responder, settings.db_path.parent / "fake_batches")
    from engram.llm.gemini import GeminiBatch

    return GeminiBatch(settings)


__all__ = ["batch_from_settings", "from_settings"]
