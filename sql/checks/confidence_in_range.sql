-- Returns every stored confidence outside [0, 1] (NaN included) in facts, fact_events and the KG
-- tables, with the table and column it sits in. Empty = pass. No params.
select
    'facts' as table_name,
    'confidence' as column_name,
    f.user_id,
    f.id,
    f.confidence as value
from facts as f
where not (f.confidence >= 0 and f.confidence <= 1)
union all
select
    'fact_events',
    'confidence_before',
    v.user_id,
    v.id,
    v.confidence_before
from fact_events as v
where not (v.confidence_before >= 0 and v.confidence_before <= 1)
union all
select
    'fact_events',
    'confidence_after',
    v.user_id,
    v.id,
    v.confidence_after
from fact_events as v
where not (v.confidence_after >= 0 and v.confidence_after <= 1)
union all
select
    'kg_entities',
    'confidence',
    k.user_id,
    k.id,
    k.confidence
from kg_entities as k
where not (k.confidence >= 0 and k.confidence <= 1)
union all
select
    'kg_edges',
    'confidence',
    k.user_id,
    k.id,
    k.confidence
from kg_edges as k
where not (k.confidence >= 0 and k.confidence <= 1)
union all
select
    'kg_entity_candidates',
    'confidence',
    k.user_id,
    k.id,
    k.confidence
from kg_entity_candidates as k
where not (k.confidence >= 0 and k.confidence <= 1)
union all
select
    'kg_edge_candidates',
    'confidence',
    k.user_id,
    k.id,
    k.confidence
from kg_edge_candidates as k
where not (k.confidence >= 0 and k.confidence <= 1)
order by 1, 3, 4
