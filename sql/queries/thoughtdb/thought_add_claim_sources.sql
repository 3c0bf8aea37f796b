-- Links claim $fact_id to each episode in $episode_ids (relation extracted_from).
-- Params: $user_id, $fact_id, $episode_ids (varchar[]), $run_id.
insert into fact_sources (user_id, fact_id, episode_id, relation, similarity, run_id)
select
    $user_id, $fact_id, r.episode_id, 'extracted_from', null, $run_id
from (select distinct unnest($episode_ids::varchar[]) as episode_id) as r
on conflict do nothing
