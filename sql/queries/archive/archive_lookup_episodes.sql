-- Returns id and status of the tenant's live episodes among $ids. Params: $user_id, $ids (varchar[]).
select e.id, e.status
from episodes as e
where e.user_id = $user_id
    and e.id in (select unnest($ids))
