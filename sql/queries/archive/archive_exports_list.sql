-- Returns manifest rows, newest first, filtered by tenant, run, status and export ids (null = any).
-- Params: $user_id, $run_id, $statuses (varchar[] or null), $export_ids (varchar[] or null).
select
    x.export_id, x.batch_id, x.run_id, x.user_id, x.table_name, x.partition_date, x.path, x.status,
    x.row_count, x.content_hash, x.file_sha256, x.file_bytes, x.finalized_rows, x.created_at,
    x.verified_at, x.finalized_at, x.note
from archive_exports as x
where ($user_id is null or x.user_id = $user_id)
    and ($run_id is null or x.run_id = $run_id)
    and ($statuses is null or list_contains($statuses, x.status))
    and ($export_ids is null or list_contains($export_ids, x.export_id))
order by x.created_at desc, x.export_id
