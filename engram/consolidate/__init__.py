"""Consolidation: the nightly stages (extract, confidence, merge, resolve, deprecate, archive, publish)."""
