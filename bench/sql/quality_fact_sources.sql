-- Returns the provenance rows (fact, episode, relation) of the tenant's facts, for the quality
-- evaluation (bench/quality/quality_*.py). Params: $user_id.
select
    s.fact_id,
    s.episode_id,
    s.relation
from fact_sources as s
where s.user_id = $user_id
order by s.fact_id, s.episode_id, s.relation
