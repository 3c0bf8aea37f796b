-- Records the intent to write one archive file (status 'writing'); a crash before it is verified
-- leaves this row behind for the next run to abandon. Params: $export_id, $batch_id, $run_id,
-- $user_id, $table_name, $partition_date, $path, $note (who writes it: writer=host:pid), $now.
insert into archive_exports (
    export_id, batch_id, run_id, user_id, table_name, partition_date, path, status, note, created_at
)
values ($export_id, $batch_id, $run_id, $user_id, $table_name, $partition_date, $path, 'writing', $note, $now)
