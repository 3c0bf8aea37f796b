-- Returns the tenants whose consolidation lease is held, and by whom (bench/perf/stage_kills.py).
-- No params.
select
    l.user_id,
    l.holder
from run_leases as l
order by l.user_id
