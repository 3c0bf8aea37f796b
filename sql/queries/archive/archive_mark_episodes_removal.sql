-- Sets status 'removal' (and status_changed_at) on the tenant's episodes among $ids that are not
-- already marked. Params: $user_id, $ids (varchar[]), $now.
update episodes
set
    status = 'removal',
    status_changed_at = $now,
    changed_at = now() at time zone 'UTC'
where user_id = $user_id
    and id in (select unnest($ids))
    and status <> 'removal'
