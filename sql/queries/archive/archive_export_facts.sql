-- Returns every column of the tenant's facts listed in the registered table `archive_keys`
-- (columns user_id, id). Params: $user_id.
select f.*
from facts as f
join archive_keys as k
    on k.user_id = f.user_id
    and k.id = f.id
where f.user_id = $user_id
