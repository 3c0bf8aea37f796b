-- Records the registered table `patch_changes` (seq, table_name, row_key, before, after) for one patch.
-- Params: $user_id, $patch_id.
insert into graph_patch_changes (patch_id, user_id, seq, table_name, row_key, before, after)
select
    $patch_id, $user_id, c.seq, c.table_name, c.row_key, c.before::json, c.after::json
from patch_changes as c
