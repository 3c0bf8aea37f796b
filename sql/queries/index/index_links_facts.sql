-- Returns the tenant's fact -> source episode links, by episode id, for the facts index generation: a
-- reader that finds the store held folds a fact under the episodes it came from with these.
-- Params: $user_id.
select
    s.episode_id,
    s.fact_id
from fact_sources as s
where s.user_id = $user_id
    and s.relation = 'extracted_from'
order by s.episode_id, s.fact_id
