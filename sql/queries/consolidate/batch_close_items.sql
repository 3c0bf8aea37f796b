-- Records the outcome of the tenant's items of a job from the registered table `item_outcomes`
-- (item_key, status, input_tokens, output_tokens, cost_usd, error); only items still submitted.
-- Params: $job_name, $user_id, $now.
update llm_batch_items as i
set
    status = o.status,
    input_tokens = o.input_tokens,
    output_tokens = o.output_tokens,
    cost_usd = o.cost_usd,
    error = o.error,
    collected_at = $now
from item_outcomes as o
where i.job_name = $job_name
    and i.user_id = $user_id
    and i.item_key = o.item_key
    and i.status = 'submitted'
