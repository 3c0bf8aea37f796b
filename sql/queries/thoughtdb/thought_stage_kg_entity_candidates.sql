-- Stages KG entity candidates (status pending) from the registered table `incoming_kg_entities`;
-- an id already staged is skipped. Returns the number of rows inserted. No params.
insert into kg_entity_candidates (
    id, user_id, name, norm_name, entity_type, confidence, source_thought_id, status, created_at
)
select
    i.id, i.user_id, i.name, i.norm_name, i.entity_type, i.confidence, i.source_thought_id,
    'pending' as status, i.created_at
from incoming_kg_entities as i
on conflict do nothing
