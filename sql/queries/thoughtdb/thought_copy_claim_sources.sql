-- Copies the fact_sources of claim $from_id to claim $to_id (lineage of a superseding claim).
-- Params: $user_id, $from_id, $to_id, $run_id.
insert into fact_sources (user_id, fact_id, episode_id, relation, similarity, run_id)
select
    fs.user_id, $to_id, fs.episode_id, fs.relation, fs.similarity, $run_id
from fact_sources as fs
where fs.user_id = $user_id
    and fs.fact_id = $from_id
on conflict do nothing
