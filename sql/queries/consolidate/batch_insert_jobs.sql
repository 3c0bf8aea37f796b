-- Records a submitted batch job, one row per tenant it holds, from the registered table
-- `incoming_jobs` (job_name, user_id, run_id, model, items, submitted_at); a known row is kept.
-- No params.
insert into llm_batch_jobs (job_name, user_id, run_id, model, state, items, submitted_at)
select
    j.job_name,
    j.user_id,
    j.run_id,
    j.model,
    'submitted',
    j.items,
    j.submitted_at
from incoming_jobs as j
on conflict do nothing
