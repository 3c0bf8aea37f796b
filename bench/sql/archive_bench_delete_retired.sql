-- Baseline for bench/perf/archive.py: deletes a tenant's retired facts and their fact_sources rows
-- without any export or verification (what an unsafe purge would cost). Params: $user_id, $cutoff.
delete from fact_sources as s
using facts as f
where s.user_id = $user_id
    and f.user_id = s.user_id
    and f.id = s.fact_id
    and f.status = 'deprecated'
    and f.last_updated <= $cutoff
