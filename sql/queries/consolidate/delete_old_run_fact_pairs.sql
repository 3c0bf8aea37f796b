-- Drops the tenant's pairs of runs other than $run_id (they are only useful within their run).
-- Params: $user_id, $run_id.
delete from run_fact_pairs
where user_id = $user_id
    and run_id <> $run_id
