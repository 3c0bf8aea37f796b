-- Inserts provenance rows from the registered table `incoming_sources`; existing links are kept.
-- No params.
insert into fact_sources (user_id, fact_id, episode_id, relation, similarity, run_id)
select
    i.user_id,
    i.fact_id,
    i.episode_id,
    i.relation,
    i.similarity,
    i.run_id
from incoming_sources as i
on conflict do nothing
