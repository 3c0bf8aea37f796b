-- Returns the fact_events of one claim of the tenant, oldest first.
-- Params: $user_id, $fact_id.
select
    ev.created_at, ev.action, ev.run_id, ev.status_before, ev.status_after, ev.confidence_before,
    ev.confidence_after, ev.related_fact_id, ev.reason
from fact_events as ev
where ev.user_id = $user_id
    and ev.fact_id = $fact_id
order by ev.created_at, ev.id
