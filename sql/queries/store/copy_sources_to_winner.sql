-- Unions the lineage of the facts in the registered table `merge_losers` into the winner.
-- Params: $user_id, $winner_id, $run_id.
insert into fact_sources (user_id, fact_id, episode_id, relation, similarity, run_id)
select
    s.user_id,
    $winner_id,
    s.episode_id,
    s.relation,
    s.similarity,
    $run_id
from fact_sources as s
join merge_losers as l
    on l.loser_id = s.fact_id
where s.user_id = $user_id
on conflict do nothing
