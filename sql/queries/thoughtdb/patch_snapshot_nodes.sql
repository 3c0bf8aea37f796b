-- Returns the tenant's nodes rows a patch may touch (before/after images): id in $ids or in $keys.
-- Params: $user_id, $ids (varchar[]: the patch's candidate ids), $keys (varchar[]: exact row keys).
select
    n.*
from nodes as n
where n.user_id = $user_id
    and (
        n.id in (select unnest($ids::varchar[]))
        or n.id in (select unnest($keys::varchar[]))
    )
order by n.id
