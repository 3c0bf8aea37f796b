-- Writes one fact_events row per row of the registered table `fact_changes`, with the fact's
-- confidence and status before and after. The id is derived from (user, run, fact, action), so a
-- retried stage never duplicates events. Params: $user_id, $run_id, $now.
insert into fact_events (
    id, user_id, fact_id, run_id, action, confidence_before, confidence_after,
    status_before, status_after, related_fact_id, reason, created_at
)
select
    'ev_' || substr(sha256($user_id || chr(31) || $run_id || chr(31) || c.fact_id || chr(31) || c.action), 1, 24),
    $user_id,
    c.fact_id,
    $run_id,
    c.action,
    f.confidence,
    coalesce(c.confidence, f.confidence),
    f.status,
    coalesce(c.status, f.status),
    c.related_fact_id,
    c.reason,
    $now
from fact_changes as c
join facts as f
    on f.user_id = $user_id
    and f.id = c.fact_id
on conflict do nothing
