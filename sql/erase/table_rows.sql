-- Returns the number of rows of one table (a name such as episodes or erase_copy.episodes). Params: $table.
select count(*) as n
from query_table($table) as t
