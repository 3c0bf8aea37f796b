-- Inserts the registered table `archive_restore_rows` (rows read back from the archive, same
-- columns as fact_sources) into fact_sources; rows already live are kept as they are. Params: none.
insert into fact_sources by name
select *
from archive_restore_rows
on conflict do nothing
