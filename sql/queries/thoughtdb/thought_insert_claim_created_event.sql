-- Writes the 'created' fact_events row of a claim made by a Thought-DB operation.
-- Params: $id, $user_id, $fact_id, $run_id, $confidence, $related_fact_id, $reason, $now.
insert into fact_events (
    id, user_id, fact_id, run_id, action, confidence_before, confidence_after,
    status_before, status_after, related_fact_id, reason, created_at
)
values (
    $id, $user_id, $fact_id, $run_id, 'created', null, $confidence,
    null, 'active', $related_fact_id, $reason, $now
)
on conflict do nothing
