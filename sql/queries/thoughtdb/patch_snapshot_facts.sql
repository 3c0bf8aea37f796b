-- Returns the tenant's facts rows a patch may touch (before/after images): id in $ids or in $keys.
-- Params: $user_id, $ids (varchar[]: the patch's candidate ids), $keys (varchar[]: exact row keys).
select
    f.*
from facts as f
where f.user_id = $user_id
    and (
        f.id in (select unnest($ids::varchar[]))
        or f.id in (select unnest($keys::varchar[]))
    )
order by f.id
