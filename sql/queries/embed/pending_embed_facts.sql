-- Returns up to $limit facts waiting for an embedding (new LLM-extracted or edited text).
-- Params: $user_id, $limit.
select
    f.user_id,
    f.id,
    f.text as content
from facts as f
where f.embedding is null
    and f.status not in ('archived', 'removal')
    and ($user_id is null or f.user_id = $user_id)
order by f.user_id, f.id
limit $limit
