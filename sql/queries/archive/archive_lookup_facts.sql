-- Returns id and status of the tenant's live facts among $ids. Params: $user_id, $ids (varchar[]).
select f.id, f.status
from facts as f
where f.user_id = $user_id
    and f.id in (select unnest($ids))
