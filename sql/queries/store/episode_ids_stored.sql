-- Returns (user_id, id) of the stored episodes among the explicit ids $ids (a short list probed
-- before an insert). Params: $ids.
select
    e.user_id,
    e.id
from episodes as e
where e.id in (select unnest($ids::varchar[]))
