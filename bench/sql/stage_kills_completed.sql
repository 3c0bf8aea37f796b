-- Returns the stages a run completed per tenant (bench/perf/stage_kills.py). Params: $run_id.
select
    r.user_id,
    r.stage
from runs as r
where r.run_id = $run_id
    and r.status = 'completed'
order by r.user_id, r.stage
