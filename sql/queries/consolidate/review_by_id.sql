-- Returns the review with id $id (of tenant $user_id, or of any tenant when it is null).
-- Params: $id, $user_id.
select
    r.id,
    r.user_id,
    r.kind,
    r.status,
    r.subject_ids,
    r.reason,
    r.attempts,
    r.run_id
from llm_reviews as r
where r.id = $id
    and ($user_id is null or r.user_id = $user_id)
