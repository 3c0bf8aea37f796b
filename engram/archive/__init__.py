"""The archive: retired rows exported to verified parquet, finalized, restorable."""
