-- Returns manifest rows that are verified without their read-back numbers, or finalized with a
-- finalized_rows count that differs from the archive_rows index. No params.
select x.export_id, x.status, x.row_count, x.finalized_rows
from archive_exports as x
where (
        x.status in ('exported', 'finalized')
        and (x.row_count is null or x.content_hash is null or x.file_sha256 is null)
    )
    or (
        x.status = 'finalized'
        and x.finalized_rows <> (select count(*) from archive_rows as r where r.export_id = x.export_id)
    )
