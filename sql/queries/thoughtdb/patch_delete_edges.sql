-- Deletes the tenant's edges rows whose id is in $ids (patch rollback).
-- Params: $user_id, $ids (varchar[]).
delete from edges
where user_id = $user_id
    and id in (select unnest($ids::varchar[]))
