-- Returns each stage a run recorded per tenant and its status, for comparing two stores' state
-- (bench/store_state.py). No params.
select
    r.run_id,
    r.user_id,
    r.stage,
    r.status
from runs as r
order by all
