-- Returns the tenant's active facts, most confident first; digests (lists of turns) are not facts of the
-- user's to show here. Params: $user_id, $limit.
select
    f.id,
    f.text,
    round(f.confidence, 4) as confidence,
    f.evidence_count
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
    and not f.is_private
    and f.claim_type <> 'digest'
order by f.confidence desc, f.id
limit $limit
