-- Deletes the tenant's live facts that a batch indexed as archived (open archive_rows entries in
-- $export_ids). Params: $user_id, $export_ids.
delete from facts as f
using archive_rows as r
where f.user_id = $user_id
    and r.user_id = f.user_id
    and r.table_name = 'facts'
    and r.row_id = f.id
    and r.restored_at is null
    and list_contains($export_ids, r.export_id)
