-- Returns the items of one batch job for one tenant that are not yet collected.
-- Params: $job_name, $user_id.
select
    i.item_key,
    i.kind,
    i.review_ids,
    i.aliases,
    i.prompt_hash
from llm_batch_items as i
where i.job_name = $job_name
    and i.user_id = $user_id
    and i.status = 'submitted'
order by i.item_key
