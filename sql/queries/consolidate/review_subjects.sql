-- Returns the subject id lists of the tenant's reviews of kind $kind (any status).
-- Params: $user_id, $kind.
select
    r.subject_ids
from llm_reviews as r
where r.user_id = $user_id
    and r.kind = $kind
