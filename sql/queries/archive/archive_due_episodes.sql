-- Returns episodes due for the archive: a retired status whose change (status_changed_at, else
-- ingested_at) is at or before $cutoff, and not restored since $cutoff.
-- Columns: user_id, table_name, id, status, changed_at.
-- Params: $user_id (null = every tenant), $statuses (varchar[]), $cutoff (timestamp).
select
    e.user_id,
    'episodes' as table_name,
    e.id,
    e.status,
    coalesce(e.status_changed_at, e.ingested_at) as changed_at
from episodes as e
where ($user_id is null or e.user_id = $user_id)
    and list_contains($statuses, e.status)
    and coalesce(e.status_changed_at, e.ingested_at) <= $cutoff
    and not exists (
        select 1
        from archive_rows as r
        where r.user_id = e.user_id
            and r.table_name = 'episodes'
            and r.row_id = e.id
            and r.restored_at > $cutoff
    )
order by e.user_id, e.id
