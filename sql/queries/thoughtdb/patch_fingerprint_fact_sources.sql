-- Returns (row_key, h) for every fact_sources row of the tenant: the key (fact_id, episode_id,
-- relation joined by chr(31)) and a hash of the whole row. Params: $user_id.
select
    t.fact_id || chr(31) || t.episode_id || chr(31) || t.relation as row_key,
    hash(t) as h
from fact_sources as t
where t.user_id = $user_id
