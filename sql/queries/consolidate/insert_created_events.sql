-- Writes a 'created' fact_events row for each fact in the registered table `incoming_facts`.
-- Params: $run_id, $now.
insert into fact_events (
    id, user_id, fact_id, run_id, action, confidence_before, confidence_after,
    status_before, status_after, related_fact_id, reason, created_at
)
select
    'ev_' || substr(sha256(i.user_id || chr(31) || $run_id || chr(31) || i.id || chr(31) || 'created'), 1, 24),
    i.user_id,
    i.id,
    $run_id,
    'created',
    null,
    i.confidence,
    null,
    i.status,
    null,
    i.reason,
    $now
from incoming_facts as i
on conflict do nothing
