-- Returns the tenant's KG edge candidates whose id is in $ids.
-- Params: $user_id, $ids (varchar[]).
select
    c.id, c.src_name, c.relation, c.dst_name, c.confidence, c.source_thought_id, c.status
from kg_edge_candidates as c
where c.user_id = $user_id
    and c.id in (select unnest($ids::varchar[]))
order by c.id
