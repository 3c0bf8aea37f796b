"""The search index: BM25, vectors and an ANN graph per tenant's table, in memory or published on disk (below query and consolidate)."""
