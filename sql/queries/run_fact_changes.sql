-- Returns what run $run_id changed for the tenant: one row per fact event (no memory text).
-- Params: $user_id, $run_id.
select
    v.fact_id,
    v.action,
    round(v.confidence_before, 4) as confidence_before,
    round(v.confidence_after, 4) as confidence_after,
    v.status_before,
    v.status_after,
    v.related_fact_id,
    v.reason
from fact_events as v
where v.user_id = $user_id
    and v.run_id = $run_id
order by v.fact_id, v.action
