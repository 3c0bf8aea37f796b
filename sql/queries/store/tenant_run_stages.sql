-- Returns every recorded stage of one run for one tenant: stage, status, counts (one read instead of
-- one per stage). Params: $run_id, $user_id.
select
    r.stage,
    r.status,
    r.counts
from runs as r
where r.run_id = $run_id
    and r.user_id = $user_id
order by r.stage
