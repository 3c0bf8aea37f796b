-- Returns the tenant's facts among $pending (ids an on-disk index generation held without a vector: they
-- may have one now), same columns as query_index_delta_facts. Run only when the list is not empty.
-- Params: $user_id, $model, $dim, $pending (ids).
select
    f.rowid as row_id,
    f.id,
    f.text as text,
    null::varchar as session_id,
    case
        when f.embedding_model = $model and f.embedding_dim = $dim then f.embedding
    end as embedding,
    f.claim_type,
    f.category,
    f.confidence,
    f.confidence_at,
    f.status,
    f.created_at,
    f.asserted_at,
    f.valid_from,
    f.valid_to,
    f.tags,
    f.visibility,
    f.is_private
from facts as f
where f.user_id = $user_id
    and list_contains($pending::varchar[], f.id)
order by f.id
