"""Timings: search, ingest, embedding, the nightly run at scale, concurrency, scale-out, archive, LLM calls."""
