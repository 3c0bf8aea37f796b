-- Returns the tenant's graph patches, newest first, with their change counts.
-- Params: $user_id, $limit.
select
    p.id, p.status, p.source, p.created_at, p.rolled_back_at,
    (select count(*) from graph_patch_changes as c where c.user_id = p.user_id and c.patch_id = p.id) as n_changes
from graph_patches as p
where p.user_id = $user_id
order by p.created_at desc, p.id
limit $limit
