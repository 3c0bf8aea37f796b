-- Marks the tenant's pending reviews listed in the registered table `review_ids` (id) as submitted
-- in a batch job. Params: $user_id.
update llm_reviews as r
set status = 'submitted'
from review_ids as w
where r.user_id = $user_id
    and r.id = w.id
    and r.status = 'pending'
