-- Deletes the tenant's nodes rows whose id is in $ids (patch rollback).
-- Params: $user_id, $ids (varchar[]).
delete from nodes
where user_id = $user_id
    and id in (select unnest($ids::varchar[]))
