-- Updates the runs row of one stage of one run for one tenant (its LLM usage columns are kept), when
-- insert_stage_run_if_absent found it there. The two plain statements are cheaper here than one
-- `insert ... on conflict do update` (5.4 vs 3.4 ms for both, 1.5 ms for the insert alone).
-- Params: $run_id, $user_id, $stage, $status, $as_of, $started_at, $finished_at, $watermark,
-- $counts, $duration_ms, $error.
update runs as r
set
    status = $status,
    as_of = $as_of,
    started_at = $started_at,
    finished_at = $finished_at,
    watermark = $watermark,
    counts = $counts::json,
    duration_ms = $duration_ms,
    error = $error
where r.run_id = $run_id
    and r.user_id = $user_id
    and r.stage = $stage
