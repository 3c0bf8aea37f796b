-- Returns every fact of the tenant for the in-memory index: its DuckDB rowid (for point fetches
-- later), id, text, and the vector only when it was made by the active embedder.
-- Params: $user_id, $model, $dim.
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
order by f.id
