-- Returns the tenant's KG edges whose id is in $ids.
-- Params: $user_id, $ids (varchar[]).
select
    e.id, e.src_entity_id, e.relation, e.dst_entity_id, e.status
from kg_edges as e
where e.user_id = $user_id
    and e.id in (select unnest($ids::varchar[]))
order by e.id
