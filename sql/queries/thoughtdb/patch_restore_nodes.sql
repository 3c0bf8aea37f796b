-- Inserts the registered table `patch_restore` (before-images of nodes rows) for the tenant.
-- Params: $user_id.
insert into nodes by name
select
    *
from patch_restore
where user_id = $user_id
