-- Returns the tenant's KG edge candidates with optional $status, most confident first, at most $limit.
-- Params: $user_id, $status, $limit.
select
    c.id, c.src_name, c.relation, c.dst_name, c.confidence, c.source_thought_id, c.status,
    c.created_at, c.decided_at
from kg_edge_candidates as c
where c.user_id = $user_id
    and ($status is null or c.status = $status)
order by c.confidence desc, c.src_name, c.relation, c.dst_name, c.id
limit $limit
