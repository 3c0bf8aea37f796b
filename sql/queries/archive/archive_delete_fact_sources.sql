-- Deletes the tenant's live fact_sources rows that a batch indexed as archived (open archive_rows
-- entries in $export_ids). Params: $user_id, $export_ids.
delete from fact_sources as s
using archive_rows as r
where s.user_id = $user_id
    and r.user_id = s.user_id
    and r.table_name = 'fact_sources'
    and r.parent_id = s.fact_id
    and r.row_id = s.fact_id || chr(31) || s.episode_id || chr(31) || s.relation
    and r.restored_at is null
    and list_contains($export_ids, r.export_id)
