-- Writes one 'restored' fact_events row per fact of the registered table `archive_restore_keys`
-- (table_name, row_id, export_id) that is live. The id is derived from (user, run, fact, export).
-- Params: $user_id, $run_id, $reason, $now.
insert into fact_events (
    id, user_id, fact_id, run_id, action, confidence_before, confidence_after,
    status_before, status_after, related_fact_id, reason, created_at
)
select
    'ev_' || substr(sha256($user_id || chr(31) || $run_id || chr(31) || f.id || chr(31) || 'restored' || chr(31) || k.export_id), 1, 24),
    $user_id,
    f.id,
    $run_id,
    'restored',
    f.confidence,
    f.confidence,
    'archived',
    f.status,
    null,
    $reason,
    $now
from archive_restore_keys as k
join facts as f
    on f.user_id = $user_id
    and f.id = k.row_id
where k.table_name = 'facts'
on conflict do nothing
