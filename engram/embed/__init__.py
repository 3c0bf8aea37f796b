"""Embedders (MiniLM ONNX, hash, Gemini, sentence-transformers) and the queue that drains pending rows."""

from engram.embed.models import VOCAB_PATH, Embedder, from_settings

__all__ = ["VOCAB_PATH", "Embedder", "from_settings"]
