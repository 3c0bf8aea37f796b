-- Returns the archive manifest: one row per parquet file written (path relative to the archive
-- root, status writing | exported | finalized | abandoned). Params: $user_id (null = every tenant).
select
    x.export_id,
    x.run_id,
    x.user_id,
    x.table_name,
    x.partition_date,
    x.path,
    x.status,
    x.row_count,
    x.finalized_rows,
    x.created_at,
    x.finalized_at
from archive_exports as x
where $user_id is null or x.user_id = $user_id
order by x.user_id, x.created_at, x.export_id
