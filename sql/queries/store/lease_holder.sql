-- Returns the current lease of a tenant. Params: $user_id.
select
    l.holder,
    l.run_id,
    l.expires_at
from run_leases as l
where l.user_id = $user_id
