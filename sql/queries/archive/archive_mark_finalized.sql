-- Marks a batch's exports finalized with the number of rows each removed from the live tables.
-- Params: $export_ids, $now.
update archive_exports as x
set
    status = 'finalized',
    finalized_at = $now,
    finalized_rows = (select count(*) from archive_rows as r where r.export_id = x.export_id)
where list_contains($export_ids, x.export_id)
    and x.status = 'exported'
