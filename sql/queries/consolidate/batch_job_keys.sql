-- Returns every item key and kind of one batch job (all its tenants), in submission order, to read
-- its replies. Params: $job_name, $user_ids (the tenants whose rows this store holds).
select
    i.item_key,
    i.kind
from llm_batch_items as i
where i.job_name = $job_name
    and list_contains($user_ids, i.user_id)
order by i.item_key
