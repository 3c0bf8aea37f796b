-- Returns existing (episode_id, fact_id) links for the episodes of run $run_id.
-- Params: $user_id, $run_id.
select
    s.episode_id,
    s.fact_id
from fact_sources as s
join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where s.user_id = $user_id
    and e.consolidated_run_id = $run_id
