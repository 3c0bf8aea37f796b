-- Returns the id of every digest the tenant's store holds, whatever its status (a rebuilt group never reuses
-- the id of a retired digest). Params: $user_id.
select
    f.id
from facts as f
where f.user_id = $user_id
    and f.claim_type = 'digest'
