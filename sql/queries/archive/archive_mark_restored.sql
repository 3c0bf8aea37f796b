-- Closes the archive_rows entries of the registered table `archive_restore_keys`
-- (table_name, row_id, export_id): the rows are live again. Params: $user_id, $run_id, $now.
update archive_rows as r
set
    restored_at = $now,
    restore_run_id = $run_id
from archive_restore_keys as k
where r.user_id = $user_id
    and r.table_name = k.table_name
    and r.row_id = k.row_id
    and r.export_id = k.export_id
    and r.restored_at is null
