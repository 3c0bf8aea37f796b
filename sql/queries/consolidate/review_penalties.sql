-- Returns the contradiction penalties recorded on the facts in the registered table
-- `review_fact_ids` (id): fact_id, run_id, confidence before and after, created_at. Params: $user_id.
select
    e.fact_id,
    e.run_id,
    e.confidence_before,
    e.confidence_after,
    e.created_at
from fact_events as e
join review_fact_ids as w
    on w.id = e.fact_id
where e.user_id = $user_id
    and e.action = 'contradicted'
order by e.created_at, e.id
