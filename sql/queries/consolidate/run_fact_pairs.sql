-- Returns run $run_id's similar pairs whose facts are both still active, with what merge rules need.
-- Params: $user_id, $run_id, $as_of, $rate.
select
    p.fact_a,
    p.fact_b,
    p.similarity,
    p.conflict,
    p.same_statement,
    effective_confidence(a.confidence, a.confidence_at, $as_of, $rate) as confidence_a,
    effective_confidence(b.confidence, b.confidence_at, $as_of, $rate) as confidence_b,
    a.category as category_a,
    b.category as category_b,
    a.evidence_count as evidence_a,
    b.evidence_count as evidence_b,
    a.created_at as created_a,
    b.created_at as created_b
from run_fact_pairs as p
join facts as a
    on a.user_id = p.user_id
    and a.id = p.fact_a
join facts as b
    on b.user_id = p.user_id
    and b.id = p.fact_b
where p.user_id = $user_id
    and p.run_id = $run_id
    and a.status = 'active'
    and b.status = 'active'
order by p.fact_a, p.fact_b
