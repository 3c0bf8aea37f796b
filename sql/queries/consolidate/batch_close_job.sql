-- Closes the tenant's row of a job: collected (replies applied) or lost (failed, cancelled, expired,
-- gone). Params: $job_name, $user_id, $state, $provider_state, $run_id, $now, $error.
update llm_batch_jobs
set
    state = $state,
    provider_state = $provider_state,
    checked_at = $now,
    collected_at = $now,
    collected_run_id = $run_id,
    error = $error
where job_name = $job_name
    and user_id = $user_id
    and state = 'submitted'
