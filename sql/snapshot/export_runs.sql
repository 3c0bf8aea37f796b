-- Returns the runs of the snapshot: one row per consolidation run, tenant and stage, with its counts
-- (json text), timing and LLM usage. Params: $user_id (null = every tenant).
select
    r.run_id,
    r.user_id,
    r.stage,
    r.status,
    r.as_of,
    r.started_at,
    r.finished_at,
    r.duration_ms,
    r.watermark,
    r.counts::varchar as counts,
    r.llm_calls,
    r.input_tokens,
    r.output_tokens,
    r.cost_usd,
    r.error
from runs as r
where $user_id is null or r.user_id = $user_id
order by r.as_of, r.run_id, r.user_id, r.stage
