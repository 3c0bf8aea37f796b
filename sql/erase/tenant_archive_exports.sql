-- Returns (export_id, path) of every archive file of one tenant, any status. Params: $user_id.
select
    x.export_id as export_id,
    x.path as path
from archive_exports as x
where x.user_id = $user_id
order by x.export_id
