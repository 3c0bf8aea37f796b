-- Returns, per tenant, the three contradiction counts of stats_contradictions.sql from a read
-- snapshot's parquet files (fact_events are its fact_history). All tenants when $user_id is null.
-- Params: $user_id, $facts, $fact_sources, $fact_history, $llm_reviews (parquet globs).
select
    t.user_id,
    (select count(*) from read_parquet($fact_sources) as s
     where s.user_id = t.user_id and s.relation = 'contradicts') as against,
    (select count(*) from read_parquet($llm_reviews) as r
     where r.user_id = t.user_id and r.kind = 'contradiction') as contradictions,
    (select count(*) from read_parquet($fact_history) as h
     where h.user_id = t.user_id and h.action = 'contradicted') as penalised
from (
    select distinct f.user_id
    from read_parquet($facts) as f
    where $user_id is null or f.user_id = $user_id
) as t
order by t.user_id
