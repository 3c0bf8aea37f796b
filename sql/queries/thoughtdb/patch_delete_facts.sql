-- Deletes the tenant's facts rows whose id is in $ids (patch rollback).
-- Params: $user_id, $ids (varchar[]).
delete from facts
where user_id = $user_id
    and id in (select unnest($ids::varchar[]))
