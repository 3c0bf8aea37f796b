-- Returns the tenant's KG entity candidates with optional $status, most confident first, at most $limit.
-- Params: $user_id, $status, $limit.
select
    c.id, c.name, c.norm_name, c.entity_type, c.confidence, c.source_thought_id, c.status,
    c.created_at, c.decided_at
from kg_entity_candidates as c
where c.user_id = $user_id
    and ($status is null or c.status = $status)
order by c.confidence desc, c.norm_name, c.id
limit $limit
