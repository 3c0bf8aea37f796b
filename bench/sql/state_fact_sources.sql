-- Returns every fact source without created_at (wall clock), for comparing two stores' state
-- (bench/store_state.py). No params.
select * exclude (created_at)
from fact_sources
order by all
