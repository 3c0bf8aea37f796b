-- Returns the tenant's fact_sources rows a patch may touch (before/after images): fact_id in $ids,
-- or key (fact_id, episode_id, relation joined by chr(31)) in $keys.
-- Params: $user_id, $ids (varchar[]: candidate ids), $keys (varchar[]: exact row keys).
select
    s.*
from fact_sources as s
where s.user_id = $user_id
    and (
        s.fact_id in (select unnest($ids::varchar[]))
        or (s.fact_id || chr(31) || s.episode_id || chr(31) || s.relation) in (select unnest($keys::varchar[]))
    )
order by s.fact_id, s.episode_id, s.relation
