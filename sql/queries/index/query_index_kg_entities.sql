-- Returns every KG entity of the tenant for the in-memory index: its DuckDB rowid (for point fetches
-- later), id, text (name and type), and the vector only when it was made by the active embedder.
-- Params: $user_id, $model, $dim.
select
    k.rowid as row_id,
    k.id,
    k.name || coalesce(' (' || k.entity_type || ')', '') as text,
    null::varchar as session_id,
    case
        when k.embedding_model = $model and k.embedding_dim = $dim then k.embedding
    end as embedding
from kg_entities as k
where k.user_id = $user_id
order by k.id
