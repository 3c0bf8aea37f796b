-- Returns the tenant's facts among $pending (ids an on-disk index generation held without a vector: they
-- may have one now), same columns and order as query_index_facts. Run only when the list is not empty.
-- Params: $user_id, $model, $dim, $pending (ids).
select
    f.rowid as row_id,
    f.id,
    f.text as text,
    null::varchar as session_id,
    case
        when f.embedding_model = $model and f.embedding_dim = $dim then f.embedding
    end as embedding
from facts as f
where f.user_id = $user_id
    and list_contains($pending::varchar[], f.id)
order by f.id
