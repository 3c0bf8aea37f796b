-- Writes the write-ahead log into the store file, so that a byte copy of the file is the whole store.
-- Params: none.
checkpoint
