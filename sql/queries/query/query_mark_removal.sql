-- Marks the tenant's episodes among $ids for removal (inner voice auto_mark_removal); only rows
-- still active or pending change. Returns the ids it marked. Params: $user_id, $ids.
update episodes as e
set
    status = 'removal',
    status_changed_at = now() at time zone 'UTC',
    changed_at = now() at time zone 'UTC'
where e.user_id = $user_id
    and list_contains($ids::varchar[], e.id)
    and e.status in ('active', 'pending_embed')
returning e.id
