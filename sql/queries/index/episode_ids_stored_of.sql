-- Returns which of the episode ids $ids the store holds for the tenant (any status): an inbox row the
-- store already holds is read from the store. Params: $user_id, $ids.
select e.id
from episodes as e
where e.user_id = $user_id
    and e.id in (select unnest($ids::varchar[]))
