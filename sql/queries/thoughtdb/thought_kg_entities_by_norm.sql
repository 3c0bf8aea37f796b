-- Returns the tenant's KG entities whose norm_name is in $norm_names (oldest first per name).
-- Params: $user_id, $norm_names (varchar[]).
select
    e.id, e.norm_name, e.name, e.entity_type, e.status
from kg_entities as e
where e.user_id = $user_id
    and e.norm_name in (select unnest($norm_names::varchar[]))
order by e.norm_name, (e.status = 'active') desc, e.created_at, e.id
