-- Promotes relations from the registered table `incoming_kg_edges` into kg_edges: a new id is
-- inserted; an existing one gains the sources and the higher confidence. No params.
insert into kg_edges as e (id, user_id, src_entity_id, relation, dst_entity_id, confidence, status, source_refs, created_at)
select
    i.id, i.user_id, i.src_entity_id, i.relation, i.dst_entity_id, i.confidence, 'active', i.source_refs, i.created_at
from incoming_kg_edges as i
on conflict (user_id, id) do update set
    confidence = greatest(e.confidence, excluded.confidence),
    status = 'active',
    source_refs = list_sort(list_distinct(list_concat(e.source_refs, excluded.source_refs)))
