-- Returns row counts per table, tenant and status (all tenants when $user_id is null).
-- Params: $user_id.
select 'episodes' as table_name, e.user_id, e.status, count(*) as n
from episodes as e
where $user_id is null or e.user_id = $user_id
group by all
union all
select 'facts', f.user_id, f.status, count(*)
from facts as f
where $user_id is null or f.user_id = $user_id
group by all
union all
select 'fact_sources', s.user_id, s.relation, count(*)
from fact_sources as s
where $user_id is null or s.user_id = $user_id
group by all
union all
select 'fact_events', v.user_id, v.action, count(*)
from fact_events as v
where $user_id is null or v.user_id = $user_id
group by all
union all
select 'llm_reviews', r.user_id, r.status, count(*)
from llm_reviews as r
where $user_id is null or r.user_id = $user_id
group by all
order by 1, 2, 3
