-- Stores the registered table `incoming_pairs` (fact_a, fact_b, similarity, conflict, same_statement) as
-- run $run_id's pairs. Params: $user_id, $run_id.
insert or replace into run_fact_pairs (user_id, run_id, fact_a, fact_b, similarity, conflict, same_statement)
select
    $user_id,
    $run_id,
    p.fact_a,
    p.fact_b,
    p.similarity,
    p.conflict,
    p.same_statement
from incoming_pairs as p
