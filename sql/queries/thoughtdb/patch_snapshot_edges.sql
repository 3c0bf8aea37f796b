-- Returns the tenant's edges rows a patch may touch (before/after images): id or an endpoint in
-- $ids, or id in $keys. Params: $user_id, $ids (varchar[]: candidate ids), $keys (varchar[]: row keys).
select
    g.*
from edges as g
where g.user_id = $user_id
    and (
        g.id in (select unnest($ids::varchar[]))
        or g.from_id in (select unnest($ids::varchar[]))
        or g.to_id in (select unnest($ids::varchar[]))
        or g.id in (select unnest($keys::varchar[]))
    )
order by g.id
