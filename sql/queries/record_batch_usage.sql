-- Adds collected batch-job usage to the runs row of stage $stage (created as 'completed': collection has
-- no other stage bookkeeping).
-- Params: $run_id, $user_id, $stage, $now, $llm_calls, $input_tokens, $output_tokens, $cost_usd.
insert into runs (run_id, user_id, stage, status, as_of, started_at, llm_calls, input_tokens, output_tokens, cost_usd)
values ($run_id, $user_id, $stage, 'completed', $now, $now, $llm_calls, $input_tokens, $output_tokens, $cost_usd)
on conflict (run_id, user_id, stage) do update
set
    llm_calls = runs.llm_calls + excluded.llm_calls,
    input_tokens = runs.input_tokens + excluded.input_tokens,
    output_tokens = runs.output_tokens + excluded.output_tokens,
    cost_usd = runs.cost_usd + excluded.cost_usd
