-- Attaches another shard file read-only as `shard_src` (the source of a reshard copy). Params: $path.
attach $path as shard_src (read_only)
