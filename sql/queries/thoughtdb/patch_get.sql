-- Returns one graph patch of the tenant (id, status, source, created_at, rolled_back_at, ops).
-- Params: $user_id, $id.
select
    id, status, source, created_at, rolled_back_at, ops
from graph_patches
where user_id = $user_id
    and id = $id
