-- Returns fact ids in the registered table `fact_changes` that the tenant does not have.
-- Params: $user_id.
select
    c.fact_id
from fact_changes as c
anti join facts as f
    on f.user_id = $user_id
    and f.id = c.fact_id
