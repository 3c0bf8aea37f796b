-- Returns id and text of the tenant's facts listed in the registered table `wanted_facts` (id).
-- Params: $user_id.
select
    f.id,
    f.text
from facts as f
join wanted_facts as w
    on w.id = f.id
where f.user_id = $user_id
