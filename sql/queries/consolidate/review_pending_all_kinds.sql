-- Returns the tenant's pending reviews of every kind, oldest first (batch mode sends them all).
-- Params: $user_id.
select
    r.id,
    r.kind,
    r.subject_ids,
    r.reason,
    r.attempts,
    r.run_id,
    r.resubmits
from llm_reviews as r
where r.user_id = $user_id
    and r.status = 'pending'
order by r.created_at, r.id
