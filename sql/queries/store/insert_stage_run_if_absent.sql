-- Records the outcome of one stage of one run for one tenant when it has no runs row yet; returns the
-- count inserted (0: the row exists, and update_stage_run updates it). LLM usage columns start at 0.
-- Params: $run_id, $user_id, $stage, $status, $as_of, $started_at, $finished_at, $watermark,
-- $counts, $duration_ms, $error.
insert into runs (
    run_id, user_id, stage, status, as_of, started_at, finished_at, watermark, counts, duration_ms, error
)
select
    $run_id, $user_id, $stage, $status, $as_of, $started_at, $finished_at, $watermark,
    $counts::json, $duration_ms, $error
where not exists (
    select 1
    from runs as r
    where r.run_id = $run_id
        and r.user_id = $user_id
        and r.stage = $stage
)
