-- Returns the LLM tokens (input + output) one run already spent on the tenant, over all stages.
-- Params: $run_id, $user_id.
select
    coalesce(sum(r.input_tokens + r.output_tokens), 0) as tokens
from runs as r
where r.run_id = $run_id
    and r.user_id = $user_id
