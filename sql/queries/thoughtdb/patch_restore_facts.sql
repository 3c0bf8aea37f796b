-- Inserts the registered table `patch_restore` (before-images of facts rows) for the tenant.
-- Params: $user_id.
insert into facts by name
select
    *
from patch_restore
where user_id = $user_id
