-- Inserts the registered table `patch_restore` (before-images of edges rows) for the tenant.
-- Params: $user_id.
insert into edges by name
select
    *
from patch_restore
where user_id = $user_id
