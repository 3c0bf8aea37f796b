-- Deletes the tenant's fact_sources rows whose key (fact_id, episode_id, relation joined by chr(31))
-- is in $keys (patch rollback). Params: $user_id, $keys (varchar[]).
delete from fact_sources
where user_id = $user_id
    and (fact_id || chr(31) || episode_id || chr(31) || relation) in (select unnest($keys::varchar[]))
