-- Returns id and asserted_at (when it was said) of the tenant's facts listed in the registered table
-- `wanted_facts` (id). Params: $user_id.
select
    f.id,
    f.asserted_at
from facts as f
join wanted_facts as w
    on w.id = f.id
where f.user_id = $user_id
