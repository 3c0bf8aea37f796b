-- Returns tenants with consolidation work at $as_of: unconsumed or unembedded episodes, pending
-- reviews, or active facts whose decayed confidence fell below $threshold. Params: $as_of, $rate, $threshold.
select distinct user_id
from (
    select e.user_id
    from episodes as e
    where e.consolidated_run_id is null
        and e.status in ('pending_embed', 'active')
    union all
    select r.user_id
    from llm_reviews as r
    where r.status = 'pending'
    union all
    select f.user_id
    from facts as f
    where f.status = 'active'
        and effective_confidence(f.confidence, f.confidence_at, $as_of, $rate) < $threshold
) as w
order by user_id
