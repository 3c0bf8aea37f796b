-- Returns the ids among $ids that are archived (open archive_rows entry) for the tenant and table.
-- Params: $user_id, $table_name, $ids (varchar[]).
select distinct r.row_id
from archive_rows as r
where r.user_id = $user_id
    and r.table_name = $table_name
    and r.restored_at is null
    and r.row_id in (select unnest($ids))
