-- Returns the DuckDB rowids of the tenant's facts at or below $max_rowid: a reader whose store counts
-- fewer facts than its on-disk index generation and delta hold finds here which of the generation's
-- rows were deleted since. Params: $user_id, $max_rowid.
select f.rowid as row_id
from facts as f
where f.user_id = $user_id
    and f.rowid <= $max_rowid::bigint
order by f.rowid
