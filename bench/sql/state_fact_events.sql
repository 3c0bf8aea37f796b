-- Returns every fact event without seq (its order of insertion), for comparing two stores' state
-- (bench/store_state.py). An archived or restored event is stamped with the wall clock of the move
-- (engram/archive/ops.py), so its created_at is left out; every other event's time comes from the
-- run's as_of. No params.
select
    * exclude (seq, created_at),
    case when e.action in ('archived', 'restored') then null else e.created_at end as created_at
from fact_events as e
order by all
