-- Returns every column of the tenant's episodes listed in the registered table `archive_keys`
-- (columns user_id, id). Params: $user_id.
select e.*
from episodes as e
join archive_keys as k
    on k.user_id = e.user_id
    and k.id = e.id
where e.user_id = $user_id
