-- Promotes entities from the registered table `incoming_kg_entities` into kg_entities: a new id is
-- inserted; an existing one keeps its name and gains the sources and the higher confidence.
-- No params.
insert into kg_entities as e (id, user_id, name, norm_name, entity_type, confidence, status, source_refs, created_at)
select
    i.id, i.user_id, i.name, i.norm_name, i.entity_type, i.confidence, 'active', i.source_refs, i.created_at
from incoming_kg_entities as i
on conflict (user_id, id) do update set
    confidence = greatest(e.confidence, excluded.confidence),
    entity_type = coalesce(e.entity_type, excluded.entity_type),
    status = 'active',
    source_refs = list_sort(list_distinct(list_concat(e.source_refs, excluded.source_refs)))
