-- Inserts the registered table `patch_restore` (before-images of fact_sources rows) for the tenant.
-- Params: $user_id.
insert into fact_sources by name
select
    *
from patch_restore
where user_id = $user_id
