-- Returns batch items carrying a review that is not a review of the item's tenant, or whose job has
-- no row for that tenant (each item is one tenant's request). Empty = pass.
select
    i.user_id,
    i.job_name,
    i.item_key,
    s.review_id
from llm_batch_items as i,
    unnest(i.review_ids) as s(review_id)
where not exists (
        select 1
        from llm_reviews as r
        where r.user_id = i.user_id
            and r.id = s.review_id
    )
    or not exists (
        select 1
        from llm_batch_jobs as j
        where j.user_id = i.user_id
            and j.job_name = i.job_name
    )
