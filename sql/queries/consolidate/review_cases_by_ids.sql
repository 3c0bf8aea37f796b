-- Returns the tenant's reviews listed in the registered table `review_ids` (id) with their status and
-- re-submission count.
-- Params: $user_id.
select
    r.id,
    r.kind,
    r.subject_ids,
    r.reason,
    r.attempts,
    r.run_id,
    r.status,
    coalesce(r.resubmits, 0) as resubmits
from llm_reviews as r
join review_ids as w
    on w.id = r.id
where r.user_id = $user_id
order by r.id
