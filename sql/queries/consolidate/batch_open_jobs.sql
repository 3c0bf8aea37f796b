-- Returns the batch jobs still waiting to be collected: one row per job and tenant, oldest first.
-- No params.
select
    j.job_name,
    j.user_id,
    j.run_id,
    j.submitted_at
from llm_batch_jobs as j
where j.state = 'submitted'
order by j.submitted_at, j.job_name, j.user_id
