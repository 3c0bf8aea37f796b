"""The store: DuckDB connection and named SQL, schema migrations, ingest, audited fact changes, runs, shards."""
