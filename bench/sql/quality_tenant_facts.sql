-- Returns every fact of the tenant (any status) with its stored confidence and the time it is exact
-- at, for the quality evaluation (bench/quality/quality_*.py). Params: $user_id.
select
    f.id,
    f.text,
    f.status,
    f.confidence,
    f.confidence_at,
    f.evidence_count,
    f.merged_into_id
from facts as f
where f.user_id = $user_id
order by f.id
