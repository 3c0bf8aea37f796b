-- Returns the recorded row of one stage of one run for one tenant, if any.
-- Params: $run_id, $user_id, $stage.
select
    r.status,
    r.counts
from runs as r
where r.run_id = $run_id
    and r.user_id = $user_id
    and r.stage = $stage
