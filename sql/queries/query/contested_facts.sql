-- Returns the ids among $fact_ids that a contradiction review not yet applied names: facts in dispute.
-- Params: $user_id, $fact_ids.
select distinct
    s.fact_id
from llm_reviews as r,
    unnest(r.subject_ids) as s(fact_id)
where r.user_id = $user_id
    and r.kind = 'contradiction'
    and r.status <> 'applied'
    and s.fact_id in (select unnest($fact_ids::varchar[]))
order by s.fact_id
