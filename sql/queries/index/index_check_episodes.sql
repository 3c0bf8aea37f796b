-- Returns (row_id, id) of the tenant's episodes at the DuckDB rowids $row_ids: an on-disk index generation
-- checks a sample of the rows it recorded against the store when it is opened, so a store recreated
-- (or compacted) under an old generation is never searched through it. Params: $user_id, $row_ids.
select
    e.rowid as row_id,
    e.id
from episodes as e
where e.rowid in (select unnest($row_ids::bigint[]))
    and e.user_id = $user_id
