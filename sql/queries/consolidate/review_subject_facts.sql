-- Returns the tenant's facts listed in the registered table `review_fact_ids` (id), with the
-- confidence decayed to $now. Params: $user_id, $now, $rate.
select
    f.id,
    f.text,
    f.claim_type,
    f.category,
    f.status,
    effective_confidence(f.confidence, f.confidence_at, $now, $rate) as confidence,
    f.evidence_count,
    f.asserted_at
from facts as f
join review_fact_ids as w
    on w.id = f.id
where f.user_id = $user_id
