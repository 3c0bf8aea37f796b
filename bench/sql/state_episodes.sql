-- Returns every episode without ingested_at, embedding and changed_at (wall clock / model output),
-- for comparing two stores' state (bench/store_state.py). No params.
select * exclude (ingested_at, embedding, changed_at)
from episodes
order by all
