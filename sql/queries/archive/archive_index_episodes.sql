-- Indexes as archived the tenant's live episodes that are in the verified files of a batch
-- (registered table `archive_file_episodes`) and unchanged since export. Params: $user_id, $now.
insert into archive_rows (user_id, table_name, row_id, export_id, parent_id, archived_at)
select e.user_id, 'episodes', e.id, a.export_id, null, $now
from archive_file_episodes as a
join episodes as e
    on e.user_id = a.user_id
    and e.id = a.id
where e.user_id = $user_id
    and e.status is not distinct from a.status
    and e.status_changed_at is not distinct from a.status_changed_at
    and e.content_hash is not distinct from a.content_hash
on conflict do nothing
