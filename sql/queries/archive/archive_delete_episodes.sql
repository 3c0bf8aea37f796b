-- Deletes the tenant's live episodes that a batch indexed as archived (open archive_rows entries in
-- $export_ids). Params: $user_id, $export_ids.
delete from episodes as e
using archive_rows as r
where e.user_id = $user_id
    and r.user_id = e.user_id
    and r.table_name = 'episodes'
    and r.row_id = e.id
    and r.restored_at is null
    and list_contains($export_ids, r.export_id)
