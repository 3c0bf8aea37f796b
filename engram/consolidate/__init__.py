"""Consolidation: the nightly stages (extract, confidence, merge, digest, resolve, deprecate, archive, publish)."""
