-- Returns the fact changes one run made, newest first, to revert them.
-- Params: $user_id, $run_id.
select
    v.fact_id,
    v.action,
    v.confidence_before,
    v.status_before
from fact_events as v
where v.user_id = $user_id
    and v.run_id = $run_id
order by v.seq desc
