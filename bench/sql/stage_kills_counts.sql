-- Returns each stage's counts per tenant of one run (bench/perf/stage_kills.py). Params: $run_id.
select
    r.stage,
    r.counts
from runs as r
where r.run_id = $run_id
order by r.user_id, r.stage
