-- Returns the episodes of the snapshot without their embeddings. Private episodes only when
-- $include_private. Params: $user_id (null = every tenant), $include_private.
select
    e.user_id,
    e.id as episode_id,
    e.kind,
    e.role,
    e.session_id,
    e.content,
    e.created_at,
    e.ingested_at,
    e.origin,
    e.visibility,
    e.is_private,
    e.tags,
    e.status,
    e.is_summary,
    e.consolidated_run_id
from episodes as e
where ($user_id is null or e.user_id = $user_id)
    and ($include_private or not e.is_private)
order by e.user_id, e.created_at, e.id
