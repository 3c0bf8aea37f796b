-- Writes one 'archived' fact_events row per fact a batch archives (open archive_rows entries in
-- $export_ids), before the fact leaves the live table. The id is derived from (user, run, fact): a
-- retried finalize never duplicates events, and a run killed mid-archive whose rerun writes the fact
-- under a new export gives the same event as an uninterrupted run. Params: $user_id, $run_id,
-- $export_ids, $reason, $now.
insert into fact_events (
    id, user_id, fact_id, run_id, action, confidence_before, confidence_after,
    status_before, status_after, related_fact_id, reason, created_at
)
select
    'ev_' || substr(sha256($user_id || chr(31) || $run_id || chr(31) || f.id || chr(31) || 'archived'), 1, 24),
    $user_id,
    f.id,
    $run_id,
    'archived',
    f.confidence,
    f.confidence,
    f.status,
    'archived',
    f.merged_into_id,
    $reason,
    $now
from archive_rows as r
join facts as f
    on f.user_id = r.user_id
    and f.id = r.row_id
where r.user_id = $user_id
    and r.table_name = 'facts'
    and r.restored_at is null
    and list_contains($export_ids, r.export_id)
on conflict do nothing
