-- Returns reviews (all tenants when $user_id is null), optionally only one $status and one $kind
-- (null = any), oldest first. Params: $user_id, $status, $kind, $limit.
select
    r.id,
    r.user_id,
    r.kind,
    r.status,
    r.subject_ids,
    r.reason,
    r.attempts,
    r.error,
    r.decided_by,
    r.decision,
    r.created_at,
    r.applied_at
from llm_reviews as r
where ($user_id is null or r.user_id = $user_id)
    and ($status is null or r.status = $status)
    and ($kind is null or r.kind = $kind)
order by r.created_at, r.user_id, r.id
limit $limit
