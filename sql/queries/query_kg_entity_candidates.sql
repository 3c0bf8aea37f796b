-- Returns the active KG entities among $ids of the tenant with confidence above $min_confidence.
-- Entities carry no tags: any $include_tags filter excludes them. Params: $user_id, $ids,
-- $include_tags, $min_confidence.
select
    k.id,
    k.name,
    k.entity_type,
    k.name || coalesce(' (' || k.entity_type || ')', '') as text,
    coalesce(k.confidence, 0.5) as confidence,
    k.created_at,
    k.source_refs
from kg_entities as k
where k.user_id = $user_id
    and list_contains($ids::varchar[], k.id)
    and k.status = 'active'
    and len($include_tags::varchar[]) = 0
    and coalesce(k.confidence, 0.5) > $min_confidence
