-- Returns, per tenant, the three contradiction counts under the run report's names: episodes against
-- a fact (fact_sources 'contradicts'; the report's 'against'), fact pairs in conflict queued for
-- review ('contradictions'), and confidence halvings ('penalised'). All tenants when $user_id is null.
-- Params: $user_id.
select
    t.user_id,
    (select count(*) from fact_sources as s
     where s.user_id = t.user_id and s.relation = 'contradicts') as against,
    (select count(*) from llm_reviews as r
     where r.user_id = t.user_id and r.kind = 'contradiction') as contradictions,
    (select count(*) from fact_events as v
     where v.user_id = t.user_id and v.action = 'contradicted') as penalised
from (
    select distinct f.user_id
    from facts as f
    where $user_id is null or f.user_id = $user_id
) as t
order by t.user_id
