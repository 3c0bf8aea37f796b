-- Returns facts whose merge pointer is broken: status merged_into without a target, a target that
-- is the fact itself, or a target that is not a fact of the same tenant. Empty = pass. No params.
select
    f.user_id,
    f.id,
    f.status,
    f.merged_into_id,
    case
        when f.merged_into_id is null then 'merged_into without a target'
        when f.merged_into_id = f.id then 'merged into itself'
        else 'target fact missing in this tenant'
    end as reason
from facts as f
where (f.status = 'merged_into' and f.merged_into_id is null)
    or f.merged_into_id = f.id
    or (
        f.merged_into_id is not null
        and not exists (
            select 1
            from facts as t
            where t.user_id = f.user_id
                and t.id = f.merged_into_id
        )
    )
order by f.user_id, f.id
