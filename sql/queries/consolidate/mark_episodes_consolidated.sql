-- Marks the episodes in the registered table `consumed_episodes` (id) as consumed by run $run_id.
-- Params: $user_id, $run_id.
update episodes as e
set consolidated_run_id = $run_id
from consumed_episodes as c
where e.user_id = $user_id
    and e.id = c.id
    and e.consolidated_run_id is null
