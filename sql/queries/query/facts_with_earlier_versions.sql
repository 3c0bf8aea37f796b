-- Returns the ids among $fact_ids that replaced an earlier version (a 'superseded' event names them as
-- related_fact_id): the only facts replaced_fact_source_episodes can find history for, read first because
-- that recursive query costs several times this one even when it finds nothing.
-- Params: $user_id, $fact_ids.
select distinct e.related_fact_id as fact_id
from fact_events as e
where e.user_id = $user_id
    and e.action = 'superseded'
    and e.related_fact_id in (select unnest($fact_ids::varchar[]))
