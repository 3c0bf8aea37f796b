-- Returns the archived rows a restore brought back to the live tables (their archive copies are
-- not shown as archived). Params: $user_id (null = every tenant).
select
    r.user_id,
    r.table_name,
    r.row_id,
    r.export_id,
    r.restored_at
from archive_rows as r
where ($user_id is null or r.user_id = $user_id)
    and r.restored_at is not null
order by r.user_id, r.table_name, r.row_id
