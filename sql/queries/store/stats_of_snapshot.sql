-- Returns row counts per table, tenant and status from a read snapshot's parquet files (the shape of
-- stats.sql; fact_events are the snapshot's fact_history), read by absolute path: no view, no working
-- directory. All tenants when $user_id is null.
-- Params: $user_id, $episodes, $facts, $fact_sources, $fact_history, $llm_reviews (parquet globs).
select 'episodes' as table_name, e.user_id, e.status, count(*) as n
from read_parquet($episodes) as e
where $user_id is null or e.user_id = $user_id
group by all
union all
select 'facts', f.user_id, f.status, count(*)
from read_parquet($facts) as f
where $user_id is null or f.user_id = $user_id
group by all
union all
select 'fact_sources', s.user_id, s.relation, count(*)
from read_parquet($fact_sources) as s
where $user_id is null or s.user_id = $user_id
group by all
union all
select 'fact_events', h.user_id, h.action, count(*)
from read_parquet($fact_history) as h
where $user_id is null or h.user_id = $user_id
group by all
union all
select 'llm_reviews', r.user_id, r.status, count(*)
from read_parquet($llm_reviews) as r
where $user_id is null or r.user_id = $user_id
group by all
order by 1, 2, 3
