-- Stores the registered table `incoming_pairs` (fact_a, fact_b, similarity, conflict) as run $run_id's
-- pairs. Params: $user_id, $run_id.
insert or replace into run_fact_pairs (user_id, run_id, fact_a, fact_b, similarity, conflict)
select
    $user_id,
    $run_id,
    p.fact_a,
    p.fact_b,
    p.similarity,
    p.conflict
from incoming_pairs as p
