-- Returns the recorded changes of one patch of the tenant, newest first (rollback order).
-- Params: $user_id, $patch_id.
select
    seq, table_name, row_key, before::varchar as before, after::varchar as after
from graph_patch_changes
where user_id = $user_id
    and patch_id = $patch_id
order by seq desc
