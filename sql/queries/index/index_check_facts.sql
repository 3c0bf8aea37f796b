-- Returns (row_id, id) of the tenant's facts at the DuckDB rowids $row_ids: an on-disk index generation
-- checks a sample of the rows it recorded against the store when it is opened, so a store recreated
-- (or compacted) under an old generation is never searched through it. Params: $user_id, $row_ids.
select
    f.rowid as row_id,
    f.id
from facts as f
where f.rowid in (select unnest($row_ids::bigint[]))
    and f.user_id = $user_id
