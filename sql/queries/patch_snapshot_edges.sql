-- Returns every edges row of the tenant (a patch's before/after image), ordered by id.
-- Params: $user_id.
select
    *
from edges
where user_id = $user_id
order by id
