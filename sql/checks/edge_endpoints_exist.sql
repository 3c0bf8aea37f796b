-- Returns edges whose from_id or to_id is not a claim (fact), node or episode of the edge's own
-- tenant. A fact or episode that left through the verified archive (an unrestored archive_rows
-- entry) still exists. Empty = pass. No params.
with ends as (
    select g.user_id, g.id, g.edge_type, 'from_id' as side, g.from_id as endpoint
    from edges as g
    union all
    select g.user_id, g.id, g.edge_type, 'to_id' as side, g.to_id as endpoint
    from edges as g
)
select
    x.user_id,
    x.id,
    x.edge_type,
    x.side,
    x.endpoint,
    case
        when exists (select 1 from facts as o where o.id = x.endpoint and o.user_id <> x.user_id)
            or exists (select 1 from nodes as o where o.id = x.endpoint and o.user_id <> x.user_id)
            or exists (select 1 from episodes as o where o.id = x.endpoint and o.user_id <> x.user_id)
            then 'endpoint belongs to another tenant'
        else 'endpoint missing'
    end as reason
from ends as x
where not exists (select 1 from facts as f where f.user_id = x.user_id and f.id = x.endpoint)
    and not exists (select 1 from nodes as n where n.user_id = x.user_id and n.id = x.endpoint)
    and not exists (select 1 from episodes as e where e.user_id = x.user_id and e.id = x.endpoint)
    and not exists (
        select 1
        from archive_rows as a
        where a.user_id = x.user_id
            and a.table_name in ('facts', 'episodes')
            and a.row_id = x.endpoint
            and a.restored_at is null
    )
order by 1, 2, 4
