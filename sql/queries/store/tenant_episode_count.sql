-- Returns the number of episodes the tenant has (any status). Params: $user_id.
select count(*) as n
from episodes as e
where e.user_id = $user_id
