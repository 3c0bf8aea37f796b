-- Returns the tenants that run $run_id began and did not finish: some runs row of the run, but not every
-- stage of $stages completed. A resumed run finishes each of them (their completed stages are skipped),
-- also when their episodes were consumed before the run stopped.
-- Params: $run_id, $stages (the stage names the run is asked for).
select r.user_id
from runs as r
where r.run_id = $run_id
group by r.user_id
having count(distinct r.stage) filter (where r.status = 'completed' and list_contains($stages, r.stage))
    < len($stages)
order by r.user_id
