-- Returns facts due for the archive: a retired status, unchanged since $cutoff, not restored since
-- $cutoff, and not the target (directly or through a chain) of a merge pointer of a fact that stays
-- live. Columns: user_id, table_name, id, status, changed_at.
-- Params: $user_id (null = every tenant), $statuses (varchar[]), $cutoff (timestamp).
with recursive due as (
    select f.user_id, f.id, f.status, f.last_updated as changed_at
    from facts as f
    where ($user_id is null or f.user_id = $user_id)
        and list_contains($statuses, f.status)
        and f.last_updated <= $cutoff
        and not exists (
            select 1
            from archive_rows as r
            where r.user_id = f.user_id
                and r.table_name = 'facts'
                and r.row_id = f.id
                and r.restored_at > $cutoff
        )
),
kept (user_id, id) as (
    select f.user_id, f.merged_into_id
    from facts as f
    where ($user_id is null or f.user_id = $user_id)
        and f.merged_into_id is not null
        and not exists (select 1 from due as d where d.user_id = f.user_id and d.id = f.id)
    union
    select f.user_id, f.merged_into_id
    from facts as f
    join kept as k
        on k.user_id = f.user_id
        and k.id = f.id
    where f.merged_into_id is not null
)
select d.user_id, 'facts' as table_name, d.id, d.status, d.changed_at
from due as d
where not exists (select 1 from kept as k where k.user_id = d.user_id and k.id = d.id)
order by d.user_id, d.id
