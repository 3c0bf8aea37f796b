-- Returns the ids in $ids that are not episodes of the tenant (used to validate source_refs).
-- Params: $user_id, $ids (varchar[]).
select distinct
    r.id
from (select unnest($ids::varchar[]) as id) as r
anti join episodes as e
    on e.user_id = $user_id
    and e.id = r.id
order by r.id
