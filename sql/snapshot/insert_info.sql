-- Records what the snapshot holds. Params: $snapshot_id, $created_at, $run_id, $store, $archive_dir,
-- $include_private, $shards.
insert into snapshot_info
values ($snapshot_id, $created_at, $run_id, $store, $archive_dir, $include_private, $shards)
