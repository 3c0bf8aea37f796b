-- Stages KG edge candidates (status pending) from the registered table `incoming_kg_edges`;
-- an id already staged is skipped. Returns the number of rows inserted. No params.
insert into kg_edge_candidates (
    id, user_id, src_name, relation, dst_name, confidence, source_thought_id, status, created_at
)
select
    i.id, i.user_id, i.src_name, i.relation, i.dst_name, i.confidence, i.source_thought_id,
    'pending' as status, i.created_at
from incoming_kg_edges as i
on conflict do nothing
