-- Inserts the registered table `archive_restore_rows` (rows read back from the archive, same
-- columns as facts) into facts; rows already live are kept as they are. Params: none.
insert into facts by name
select *
from archive_restore_rows
on conflict do nothing
