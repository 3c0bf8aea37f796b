-- Returns the manifest rows of the archive file at one relative path (every tenant). Params: $path.
select
    x.export_id as export_id,
    x.user_id as user_id
from archive_exports as x
where x.path = $path
order by x.export_id
