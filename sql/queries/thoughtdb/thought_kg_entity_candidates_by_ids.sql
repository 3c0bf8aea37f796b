-- Returns the tenant's KG entity candidates whose id is in $ids.
-- Params: $user_id, $ids (varchar[]).
select
    c.id, c.name, c.norm_name, c.entity_type, c.confidence, c.source_thought_id, c.status
from kg_entity_candidates as c
where c.user_id = $user_id
    and c.id in (select unnest($ids::varchar[]))
order by c.id
