-- Returns tenants with consolidation work at $as_of: unconsumed or unembedded episodes, pending
-- reviews when an LLM can decide them ($with_llm), active facts whose decayed confidence fell below
-- $threshold (not of a lasting claim type, $lasting, nor named by a contradiction review not yet applied:
-- the deprecation_candidates rule), or retired rows older than $retire_before (due for the archive).
-- Params: $as_of, $rate, $threshold, $retire_before, $with_llm, $lasting.
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
        and $with_llm
    union all
    select f.user_id
    from facts as f
    where f.status = 'active'
        and not list_contains($lasting, f.claim_type)
        and effective_confidence(f.confidence, f.confidence_at, $as_of, $rate) < $threshold
        and f.id not in (
            select s.fact_id
            from llm_reviews as r,
                unnest(r.subject_ids) as s(fact_id)
            where r.user_id = f.user_id
                and r.kind = 'contradiction'
                and r.status <> 'applied'
        )
    union all
    select f.user_id
    from facts as f
    where f.status in ('removal', 'merged_into', 'deprecated', 'retracted', 'superseded')
        and f.last_updated < $retire_before
    union all
    select e.user_id
    from episodes as e
    where e.status = 'removal'
) as w
order by user_id
