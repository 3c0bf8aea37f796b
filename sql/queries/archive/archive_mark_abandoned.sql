-- Marks an unfinalized export abandoned (its rows stay live; its file is renamed out of the archive).
-- Params: $export_id, $path (the file's new relative path), $note.
update archive_exports
set
    status = 'abandoned',
    path = $path,
    note = $note
where export_id = $export_id
    and status in ('writing', 'exported')
