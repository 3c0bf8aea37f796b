-- Records (or replaces) the outcome of one stage. Params: $run_id, $user_id, $stage, $status,
-- $as_of, $started_at, $finished_at, $watermark, $counts, $duration_ms, $error.
insert or replace into runs (
    run_id, user_id, stage, status, as_of, started_at, finished_at, watermark, counts,
    duration_ms, llm_calls, input_tokens, output_tokens, cost_usd, error
)
select
    $run_id, $user_id, $stage, $status, $as_of, $started_at, $finished_at, $watermark,
    $counts::json, $duration_ms,
    coalesce(r.llm_calls, 0), coalesce(r.input_tokens, 0), coalesce(r.output_tokens, 0),
    coalesce(r.cost_usd, 0), $error
from (select 1) as one
left join runs as r
    on r.run_id = $run_id
    and r.user_id = $user_id
    and r.stage = $stage
