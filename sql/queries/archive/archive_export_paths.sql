-- Returns the relative paths of every export of a run, tenant and table (to pick a new file name).
-- Params: $run_id, $user_id, $table_name.
select x.path
from archive_exports as x
where x.run_id = $run_id
    and x.user_id = $user_id
    and x.table_name = $table_name
