-- Returns fact_sources rows whose fact or episode is not in the row's own tenant: missing, or only
-- present under another tenant. An episode that left through the verified archive (an unrestored
-- archive_rows entry) is not missing. Empty = pass. No params.
select
    s.user_id,
    s.fact_id,
    s.episode_id,
    s.relation,
    case
        when exists (
            select 1
            from facts as o
            where o.id = s.fact_id
                and o.user_id <> s.user_id
        ) then 'fact belongs to another tenant'
        else 'fact missing'
    end as reason
from fact_sources as s
where not exists (
    select 1
    from facts as f
    where f.user_id = s.user_id
        and f.id = s.fact_id
)
union all
select
    s.user_id,
    s.fact_id,
    s.episode_id,
    s.relation,
    case
        when exists (
            select 1
            from episodes as o
            where o.id = s.episode_id
                and o.user_id <> s.user_id
        ) then 'episode belongs to another tenant'
        else 'episode missing'
    end as reason
from fact_sources as s
where not exists (
    select 1
    from episodes as e
    where e.user_id = s.user_id
        and e.id = s.episode_id
)
    and not exists (
        select 1
        from archive_rows as a
        where a.user_id = s.user_id
            and a.table_name = 'episodes'
            and a.row_id = s.episode_id
            and a.restored_at is null
    )
order by 1, 2, 3, 5
