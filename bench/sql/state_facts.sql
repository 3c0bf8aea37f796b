-- Returns every fact without its embedding and changed_at (wall clock), for comparing two stores'
-- consolidated state (bench/store_state.py). No params.
select * exclude (embedding, changed_at)
from facts
order by all
