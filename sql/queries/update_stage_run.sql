-- Updates the runs row of one stage of one run for one tenant, if there is one (its LLM usage
-- columns are kept); insert_stage_run_if_absent creates it otherwise. Two plain statements are
-- ~3x cheaper here than one `insert or replace`.
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
