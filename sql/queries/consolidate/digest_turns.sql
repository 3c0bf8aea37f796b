-- Returns the tenant's embedded, active episodes from $since to $until, oldest first, with the columns the
-- digests are built from (engram.consolidate.digests keeps the human turns).
-- Params: $user_id, $since, $until, $model, $dim.
select
    e.id,
    e.role,
    e.origin,
    e.kind,
    e.session_id,
    e.content,
    e.created_at,
    e.is_private,
    e.visibility,
    e.tags,
    e.embedding
from episodes as e
where e.user_id = $user_id
    and e.status = 'active'
    and e.embedding_model = $model
    and e.embedding_dim = $dim
    and e.created_at >= $since
    and e.created_at <= $until
order by e.created_at, e.id
