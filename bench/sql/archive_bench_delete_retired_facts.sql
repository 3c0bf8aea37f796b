-- Baseline for bench/perf/archive.py: deletes a tenant's retired facts without any export or
-- verification (run after archive_bench_delete_retired). Params: $user_id, $cutoff.
delete from facts as f
where f.user_id = $user_id
    and f.status = 'deprecated'
    and f.last_updated <= $cutoff
