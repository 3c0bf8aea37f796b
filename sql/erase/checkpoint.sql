-- Writes the WAL into the store file (so no WAL file is left beside it). No params.
force checkpoint
