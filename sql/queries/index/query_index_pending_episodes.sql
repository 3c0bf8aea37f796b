-- Returns the tenant's episodes among $pending (ids an on-disk index generation held without a vector: they
-- may have one now), same columns as query_index_delta_episodes
-- (pending_text: what the embedding queue embeds, for a search that embeds pending rows on the fly). Run only when the list is not empty.
-- Params: $user_id, $model, $dim, $pending (ids).
select
    e.rowid as row_id,
    e.id,
    coalesce(e.role || ': ', '') || e.content as text,
    e.session_id,
    case
        when e.embedding_model = $model and e.embedding_dim = $dim then e.embedding
    end as embedding,
    e.role,
    e.kind,
    e.origin,
    e.created_at,
    e.tags,
    e.status,
    e.visibility,
    e.is_private,
    case
        when e.embedding_model = $model and e.embedding_dim = $dim then null
        else e.content
    end as pending_text
from episodes as e
where e.user_id = $user_id
    and list_contains($pending::varchar[], e.id)
order by e.session_id nulls last, e.created_at, e.id
