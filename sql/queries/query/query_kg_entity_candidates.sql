-- Returns the tenant's KG entities at the DuckDB rowids $row_ids (taken from the in-memory index),
-- with `eligible` telling whether each is active with confidence above $min_confidence; entities
-- carry no tags, so any $include_tags filter makes them ineligible. The caller checks every rowid
-- still holds the id it expects. Params: $user_id, $row_ids, $include_tags, $min_confidence.
select
    k.rowid as row_id,
    k.id,
    k.name,
    k.entity_type,
    k.name || coalesce(' (' || k.entity_type || ')', '') as text,
    coalesce(k.confidence, 0.5) as confidence,
    k.created_at,
    k.source_refs,
    (
        k.status = 'active'
        and len($include_tags::varchar[]) = 0
        and coalesce(k.confidence, 0.5) > $min_confidence
    ) as eligible
from kg_entities as k
where k.rowid in (select unnest($row_ids::bigint[]))
    and k.user_id = $user_id
