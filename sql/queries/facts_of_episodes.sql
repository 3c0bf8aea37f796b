-- Returns the facts extracted from the episodes $episode_ids (one row per link): (episode_id, fact_id).
-- Params: $user_id, $episode_ids.
select
    s.episode_id,
    s.fact_id
from fact_sources as s
where s.user_id = $user_id
    and s.relation = 'extracted_from'
    and s.episode_id in (select unnest($episode_ids::varchar[]))
order by s.episode_id, s.fact_id
