-- Adds LLM usage to the runs row of one stage, creating it with status $status if the stage has none yet
-- ('running' for a stage in progress; 'completed' for batch-job collection, which has no other stage
-- bookkeeping).
-- Params: $run_id, $user_id, $stage, $status, $now, $llm_calls, $input_tokens, $output_tokens, $cost_usd.
insert into runs (run_id, user_id, stage, status, as_of, started_at, llm_calls, input_tokens, output_tokens, cost_usd)
values ($run_id, $user_id, $stage, $status, $now, $now, $llm_calls, $input_tokens, $output_tokens, $cost_usd)
on conflict (run_id, user_id, stage) do update
set
    llm_calls = runs.llm_calls + excluded.llm_calls,
    input_tokens = runs.input_tokens + excluded.input_tokens,
    output_tokens = runs.output_tokens + excluded.output_tokens,
    cost_usd = runs.cost_usd + excluded.cost_usd
