-- Returns every episode of the tenant with the columns query_episode_candidates reads, and when it was
-- last updated: an on-disk index generation keeps them, so a search filters and shows its candidates
-- without reading the store; an episode updated later (changed_at) is read again from the store.
-- Params: $user_id.
select
    e.rowid as row_id,
    e.id,
    e.session_id,
    e.role,
    e.kind,
    e.origin,
    e.created_at,
    e.tags,
    e.status,
    e.visibility,
    e.is_private,
    e.changed_at
from episodes as e
where e.user_id = $user_id
