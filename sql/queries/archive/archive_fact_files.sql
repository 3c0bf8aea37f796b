-- Returns, for each of the tenant's archived (not restored) facts among $ids, the export file holding
-- it: row_id, path (relative to the archive root), archived_at, run_id (the archiving run).
-- Params: $user_id, $ids (varchar[]).
select
    r.row_id,
    x.path,
    r.archived_at,
    x.run_id
from archive_rows as r
join archive_exports as x
    on x.export_id = r.export_id
where r.user_id = $user_id
    and r.table_name = 'facts'
    and r.restored_at is null
    and r.row_id in (select unnest($ids))
order by r.row_id, r.archived_at desc
