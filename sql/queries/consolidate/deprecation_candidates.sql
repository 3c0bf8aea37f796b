-- Returns the tenant's active facts whose decayed confidence at $as_of is below $threshold; claims of a
-- lasting type ($lasting: instructions, preferences) hold until revoked or replaced and are never due.
-- Params: $user_id, $as_of, $rate, $threshold, $lasting.
select
    f.id,
    effective_confidence(f.confidence, f.confidence_at, $as_of, $rate) as confidence_now
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
    and not list_contains($lasting, f.claim_type)
    and effective_confidence(f.confidence, f.confidence_at, $as_of, $rate) < $threshold
order by f.id
