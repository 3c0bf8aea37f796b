"""The LLM seam: the interface (base), the Gemini client, the fake, usage and cost; from_settings picks one."""

from __future__ import annotations

from engram.llm.base import LLM
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


__all__ = ["from_settings"]
