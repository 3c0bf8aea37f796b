-- Returns id and status of the tenant's reviews listed in the registered table `review_ids` (id).
-- Params: $user_id.
select
    r.id,
    r.status
from llm_reviews as r
join review_ids as w
    on w.id = r.id
where r.user_id = $user_id
