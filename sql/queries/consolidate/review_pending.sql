-- Returns the tenant's pending reviews of the given kinds, oldest first.
-- Params: $user_id, $kinds (list of kind names).
select
    r.id,
    r.kind,
    r.subject_ids,
    r.reason,
    r.attempts,
    r.run_id
from llm_reviews as r
where r.user_id = $user_id
    and r.status = 'pending'
    and list_contains($kinds, r.kind)
order by r.created_at, r.id
