-- Returns up to $limit episodes waiting for an embedding (all tenants when $user_id is null).
-- Params: $user_id, $limit.
select
    e.user_id,
    e.id,
    e.content
from episodes as e
where e.status = 'pending_embed'
    and ($user_id is null or e.user_id = $user_id)
order by e.user_id, e.ingested_at, e.id
limit $limit
