-- Returns one fact of the tenant with its audit fields. Params: $user_id, $fact_id.
select
    f.id, f.text, f.claim_type, f.category, f.status, f.confidence, f.confidence_at,
    f.evidence_count, f.merged_into_id, f.asserted_at, f.valid_from, f.valid_to, f.created_at,
    f.last_updated, f.last_reinforced_at, f.visibility, f.is_private, f.embedding_model, f.run_id
from facts as f
where f.user_id = $user_id
    and f.id = $fact_id
