-- Records outcomes from the registered table `review_outcomes` (id, status, decision, decided_by,
-- model, prompt_hash, input_tokens, output_tokens, latency_ms, cost_usd, error, attempt_inc) on the
-- tenant's reviews that are still open (pending, failed, or submitted in a batch job). Params: $user_id, $now.
update llm_reviews as r
set
    status = o.status,
    decision = coalesce(o.decision::json, r.decision),
    decided_by = coalesce(o.decided_by, r.decided_by),
    model = o.model,
    prompt_hash = o.prompt_hash,
    input_tokens = o.input_tokens,
    output_tokens = o.output_tokens,
    latency_ms = o.latency_ms,
    cost_usd = o.cost_usd,
    attempts = r.attempts + o.attempt_inc,
    error = o.error,
    decided_at = case when o.status = 'applied' then $now else r.decided_at end,
    applied_at = case when o.status = 'applied' then $now else r.applied_at end
from review_outcomes as o
where r.user_id = $user_id
    and r.id = o.id
    and r.status in ('pending', 'failed', 'submitted')
