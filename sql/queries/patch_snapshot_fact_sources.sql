-- Returns every fact_sources row of the tenant (a patch's before/after image), ordered by key.
-- Params: $user_id.
select
    *
from fact_sources
where user_id = $user_id
order by fact_id, episode_id, relation
