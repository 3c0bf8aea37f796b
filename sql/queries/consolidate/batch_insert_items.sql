-- Records the items of a submitted batch job from the registered table `incoming_items`
-- (job_name, item_key, user_id, run_id, kind, review_ids, aliases, prompt_hash, estimated_tokens,
-- submitted_at); a known item is kept. No params.
insert into llm_batch_items (job_name, item_key, user_id, run_id, kind, review_ids, aliases, prompt_hash,
                             estimated_tokens, status, submitted_at)
select
    i.job_name,
    i.item_key,
    i.user_id,
    i.run_id,
    i.kind,
    i.review_ids,
    i.aliases::json,
    i.prompt_hash,
    i.estimated_tokens,
    'submitted',
    i.submitted_at
from incoming_items as i
on conflict do nothing
