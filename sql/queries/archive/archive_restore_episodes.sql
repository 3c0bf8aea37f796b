-- Inserts the registered table `archive_restore_rows` (rows read back from the archive, same
-- columns as episodes) into episodes; rows already live are kept as they are. Params: none.
insert into episodes by name
select *
from archive_restore_rows
on conflict do nothing
