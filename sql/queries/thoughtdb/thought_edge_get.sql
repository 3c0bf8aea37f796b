-- Returns one edge of the tenant.
-- Params: $user_id, $id.
select
    ed.id, ed.edge_type, ed.from_id, ed.to_id, ed.status, ed.source_refs, ed.created_at
from edges as ed
where ed.user_id = $user_id
    and ed.id = $id
