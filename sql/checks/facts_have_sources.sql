-- Returns facts (any live status) with no fact_sources row in their own tenant: provenance lost.
-- Empty = pass. No params.
select
    f.user_id,
    f.id,
    f.status
from facts as f
where f.status <> 'archived'
    and not exists (
        select 1
        from fact_sources as s
        where s.user_id = f.user_id
            and s.fact_id = f.id
    )
order by f.user_id, f.id
