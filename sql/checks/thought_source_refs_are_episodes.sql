-- Returns Thought-DB records (nodes, edges) with a source_ref that is not an episode of the record's
-- own tenant (missing, or only present under another tenant), or with no source_refs at all. An
-- episode that left through the verified archive (an unrestored archive_rows entry) is not missing.
-- Empty = pass. No params.
with refs as (
    select 'nodes' as table_name, n.user_id, n.id, unnest(n.source_refs) as ref
    from nodes as n
    union all
    select 'edges' as table_name, g.user_id, g.id, unnest(g.source_refs) as ref
    from edges as g
)
select
    r.table_name,
    r.user_id,
    r.id,
    r.ref,
    case
        when exists (
            select 1
            from episodes as o
            where o.id = r.ref
                and o.user_id <> r.user_id
        ) then 'episode belongs to another tenant'
        else 'episode missing'
    end as reason
from refs as r
where not exists (
    select 1
    from episodes as e
    where e.user_id = r.user_id
        and e.id = r.ref
)
    and not exists (
        select 1
        from archive_rows as a
        where a.user_id = r.user_id
            and a.table_name = 'episodes'
            and a.row_id = r.ref
            and a.restored_at is null
    )
union all
select 'nodes' as table_name, n.user_id, n.id, null as ref, 'no source_refs' as reason
from nodes as n
where len(n.source_refs) = 0
union all
select 'edges' as table_name, g.user_id, g.id, null as ref, 'no source_refs' as reason
from edges as g
where len(g.source_refs) = 0
order by 1, 2, 3, 4
