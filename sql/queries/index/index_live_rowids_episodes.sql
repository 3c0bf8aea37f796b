-- Returns the DuckDB rowids of the tenant's episodes at or below $max_rowid: a reader whose store counts
-- fewer episodes than its on-disk index generation and delta hold finds here which of the generation's
-- rows were deleted since. Params: $user_id, $max_rowid.
select e.rowid as row_id
from episodes as e
where e.user_id = $user_id
    and e.rowid <= $max_rowid::bigint
order by e.rowid
