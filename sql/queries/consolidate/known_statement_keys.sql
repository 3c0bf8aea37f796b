-- Returns the keys, among the registered table `wanted_keys` (key), that an active fact of the tenant
-- already states. Params: $user_id.
select distinct
    f.statement_key
from facts as f
inner join wanted_keys as w on f.statement_key = w.key
where f.user_id = $user_id
    and f.status = 'active'
