-- Returns the tenant's episodes listed in the registered table `wanted_episodes` (id) with what a
-- fact needs from them; with $model/$dim set, only those with vectors of that embedder.
-- Params: $user_id, $model, $dim (null = any).
select
    e.id,
    e.role,
    e.content,
    e.created_at,
    e.is_private,
    e.visibility,
    e.tags,
    e.embedding
from episodes as e
join wanted_episodes as w
    on w.id = e.id
where e.user_id = $user_id
    and ($model is null or e.embedding_model = $model)
    and ($dim is null or e.embedding_dim = $dim)
order by e.created_at, e.id
