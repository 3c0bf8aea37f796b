-- Detaches the reshard source shard `shard_src`. No params.
detach shard_src
