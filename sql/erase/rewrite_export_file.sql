-- Records that an archive file was rewritten without an erased tenant's rows: its new row count, content
-- hash, sha256 and size. Params: $export_id, $row_count, $content_hash, $file_sha256, $file_bytes.
update archive_exports
set
    row_count = $row_count,
    content_hash = $content_hash,
    file_sha256 = $file_sha256,
    file_bytes = $file_bytes
where export_id = $export_id
