-- Returns the tenant's active facts whose decayed confidence at $as_of is below $threshold; claims of a
-- lasting type ($lasting: instructions, preferences) hold until revoked or replaced and are never due, and
-- neither is a fact a contradiction review not yet applied names: the review decides it (a contested pair
-- stays visible, both sides marked, instead of both vanishing the night they were halved).
-- Params: $user_id, $as_of, $rate, $threshold, $lasting.
select
    f.id,
    effective_confidence(f.confidence, f.confidence_at, $as_of, $rate) as confidence_now
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
    and not list_contains($lasting, f.claim_type)
    and effective_confidence(f.confidence, f.confidence_at, $as_of, $rate) < $threshold
    and f.id not in (
        select s.fact_id
        from llm_reviews as r,
            unnest(r.subject_ids) as s(fact_id)
        where r.user_id = $user_id
            and r.kind = 'contradiction'
            and r.status <> 'applied'
    )
order by f.id
