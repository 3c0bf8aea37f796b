-- Returns every episode of the tenant for the in-memory index: its DuckDB rowid (for point fetches
-- later), id, searchable text ("role: content"), session_id, role (an agent's reply borrows no score from
-- the request before it), and the vector only when it was made by the active embedder, else its content as
-- pending_text (what the embedding queue embeds: a search may embed a few such rows on the fly). Ordered by
-- session and time so neighbouring turns sit next to each other.
-- Params: $user_id, $model, $dim.
select
    e.rowid as row_id,
    e.id,
    coalesce(e.role || ': ', '') || e.content as text,
    e.session_id,
    case
        when e.embedding_model = $model and e.embedding_dim = $dim then e.embedding
    end as embedding,
    case
        when e.embedding_model = $model and e.embedding_dim = $dim then null
        else e.content
    end as pending_text,
    e.role
from episodes as e
where e.user_id = $user_id
order by e.session_id nulls last, e.created_at, e.id
