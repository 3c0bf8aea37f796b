-- Notes the provider state of a job still running, on the tenant's row. Params: $job_name, $user_id,
-- $provider_state, $now.
update llm_batch_jobs
set
    provider_state = $provider_state,
    checked_at = $now
where job_name = $job_name
    and user_id = $user_id
    and state = 'submitted'
