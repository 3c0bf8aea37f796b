-- Returns the tenant's claims (facts) filtered by optional $status and $claim_type, newest first,
-- at most $limit; private ones only when $include_private.
-- Params: $user_id, $status, $claim_type, $include_private, $limit.
select
    f.id, f.claim_type, f.text, f.status, f.confidence, f.asserted_at, f.valid_from, f.valid_to,
    f.merged_into_id, f.visibility, f.scope
from facts as f
where f.user_id = $user_id
    and ($status is null or f.status = $status)
    and ($claim_type is null or f.claim_type = $claim_type)
    and ($include_private or not (f.is_private or f.visibility = 'private'))
order by f.asserted_at desc, f.id
limit $limit
