-- Marks a written file as verified (status 'exported') with what was read back.
-- Params: $export_id, $row_count, $content_hash, $file_sha256, $file_bytes, $now.
update archive_exports
set
    status = 'exported',
    row_count = $row_count,
    content_hash = $content_hash,
    file_sha256 = $file_sha256,
    file_bytes = $file_bytes,
    verified_at = $now
where export_id = $export_id
    and status = 'writing'
