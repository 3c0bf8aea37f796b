-- Returns the tenant's edges filtered by optional $edge_type, $from_id, $to_id and $status,
-- newest first, at most $limit.
-- Params: $user_id, $edge_type, $from_id, $to_id, $status, $limit.
select
    ed.id, ed.edge_type, ed.from_id, ed.to_id, ed.status, ed.source_refs, ed.created_at
from edges as ed
where ed.user_id = $user_id
    and ($edge_type is null or ed.edge_type = $edge_type)
    and ($from_id is null or ed.from_id = $from_id)
    and ($to_id is null or ed.to_id = $to_id)
    and ($status is null or ed.status = $status)
order by ed.created_at desc, ed.id
limit $limit
