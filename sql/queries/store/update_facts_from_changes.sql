-- Applies the registered table `fact_changes` to the tenant's facts. Null fields keep their value.
-- Params: $user_id, $now.
update facts as f
set
    confidence = coalesce(c.confidence, f.confidence),
    -- a new confidence is always the value as of $now, so the decay clock restarts there
    confidence_at = case when c.confidence is not null then $now else f.confidence_at end,
    status = coalesce(c.status, f.status),
    merged_into_id = coalesce(c.merged_into_id, f.merged_into_id),
    valid_to = coalesce(c.valid_to, f.valid_to),
    evidence_count = f.evidence_count + coalesce(c.evidence_delta, 0),
    last_updated = $now,
    changed_at = now() at time zone 'UTC',
    last_reinforced_at = case when c.reinforced then $now else f.last_reinforced_at end
from fact_changes as c
where f.user_id = $user_id
    and f.id = c.fact_id
