-- Returns the audit trail of one fact, oldest first. Params: $user_id, $fact_id.
select
    v.created_at, v.run_id, v.action, v.confidence_before, v.confidence_after,
    v.status_before, v.status_after, v.related_fact_id, v.reason
from fact_events as v
where v.user_id = $user_id
    and v.fact_id = $fact_id
order by v.seq
